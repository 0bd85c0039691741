"""The server of the baseline codebase: runs the strategy module's Flower
strategy, records the global model's predictions on the global test rows
before the first round and after each, and at the end writes them, with the
clients' own (``client_app``), to ``predictions.npz`` and the final global
model to ``model.npz``. The test labels are not here: the host scores."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import strategy
import task
from flwr.app import ArrayRecord, ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp

app = ServerApp()
CLIENT_PREDICTIONS = Path("client_predictions")


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    x_test, _ = task.load_tests()
    weights = task.init_model(x_test.shape[1], task.num_classes(), int(cfg["hidden"]),
                              int(cfg["seed"]))  # fmt: skip
    predictions: dict[str, np.ndarray] = {}
    latest = [weights]  # the last global model evaluated

    def evaluate(server_round: int, arrays: ArrayRecord) -> None:
        model = latest[0] = arrays.to_numpy_ndarrays()
        predictions[f"global_{server_round}"] = task.predict(model, x_test)
        if server_round == 0:  # before training every client holds this model
            for k in range(int(cfg["clients"])):
                local = task.load_client(k)["x_test"]
                predictions[f"clients_0_{k}"] = task.predict(model, local)

    strategy.build_strategy(cfg).start(
        grid=grid, initial_arrays=ArrayRecord(weights), num_rounds=int(cfg["rounds"]),
        train_config=ConfigRecord({}), evaluate_fn=evaluate,
    )  # fmt: skip
    for path in sorted(CLIENT_PREDICTIONS.glob("*.npy")):
        predictions[path.stem] = np.load(path)
    _save("predictions.npz", predictions)
    _save("model.npz", dict(enumerate(latest[0])))


def _save(path: str, arrays: dict) -> None:
    """``np.savez`` atomically; integer keys become ``arr_<i>``."""
    named = {k if isinstance(k, str) else f"arr_{k}": a for k, a in arrays.items()}
    with open(path + ".tmp", "wb") as handle:
        np.savez(handle, **named)
    os.replace(path + ".tmp", path)

"""The server of the baseline codebase: runs the strategy module's Flower
strategy, evaluates the global model on the global test set (and on each
task's part of it, for a continual task) before the first round and after
each, and writes ``metrics.json`` with the clients' average local accuracy."""

from __future__ import annotations

import json
import os

import strategy
import task
from flwr.app import ArrayRecord, ConfigRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    x_test, y_test, task_test = task.load_tests()
    weights = task.init_model(x_test.shape[1], task.num_classes(), int(cfg["hidden"]),
                              int(cfg["seed"]))  # fmt: skip
    history: list[dict] = []

    def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        model = arrays.to_numpy_ndarrays()
        loss, accuracy = task.evaluate(model, x_test, y_test)
        record = {"round": server_round, "loss": loss, "accuracy": accuracy}
        if server_round == 0:  # before training every client holds this model
            record["client_accuracy"] = _client_mean(model, int(cfg["clients"]))
        if task_test is not None:
            record["task_accuracy"] = [
                task.evaluate(model, x_test[task_test == t], y_test[task_test == t])[1]
                for t in range(int(task_test.max()) + 1)
            ]
        history.append(record)
        return MetricRecord({"accuracy": accuracy, "loss": loss})

    result = strategy.build_strategy(cfg).start(
        grid=grid, initial_arrays=ArrayRecord(weights), num_rounds=int(cfg["rounds"]),
        train_config=ConfigRecord({}), evaluate_fn=evaluate,
    )  # fmt: skip
    clients = result.evaluate_metrics_clientapp
    for record in history:
        if record["round"] in clients:
            _from_clients(record, clients[record["round"]])
    _write("metrics.json", {"strategy": strategy.NAME, "rounds": history})


def _from_clients(record: dict, metrics) -> None:
    """The clients' averages into a round's record; where they score each
    task with its own model (FedWeIT) their task accuracies replace the
    global model's, and accuracy is their mean."""
    record["client_accuracy"] = float(metrics["client_accuracy"])
    if "task_accuracy" in record and "task_accuracy_0" in metrics:
        record["task_accuracy"] = [
            float(metrics[f"task_accuracy_{j}"])
            for j in range(len(record["task_accuracy"]))
        ]
        record["accuracy"] = sum(record["task_accuracy"]) / len(record["task_accuracy"])


def _client_mean(model, clients: int) -> float:
    """The average accuracy of ``model`` on the clients' local test sets."""
    scores = []
    for k in range(clients):
        arrays = task.load_client(k)
        scores.append(
            task.evaluate(model, arrays["x_test"], arrays["y_test"].astype("int64"))[1]
        )
    return sum(scores) / len(scores)


def _write(path: str, payload: dict) -> None:
    with open(path + ".tmp", "w") as handle:
        json.dump(payload, handle, indent=1)
    os.replace(path + ".tmp", path)

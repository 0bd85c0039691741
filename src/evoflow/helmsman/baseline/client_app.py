"""The clients of the baseline codebase: each round, the strategy module's
client side trains on this client's data; at evaluation the client predicts
its local test rows with the model the strategy gives it (and, where the
strategy keeps one model per task, the global test rows with each row's
task's model) and leaves the predictions for the server to gather."""

from __future__ import annotations

import os

import numpy as np
import strategy
import task
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from server_app import CLIENT_PREDICTIONS

app = ClientApp()


@app.train()
def train(msg: Message, context: Context) -> Message:
    partition = int(context.node_config["partition-id"])
    sent = msg.content["config"]
    server_round = int(sent.get("server-round", 0))
    x, y = task.training_data(
        partition, server_round, context.run_config, context.state
    )
    weights = msg.content["arrays"].to_numpy_ndarrays()
    arrays, metrics = strategy.client_train(weights, x, y, context.run_config, server_round,
                                            partition, context.state, sent)  # fmt: skip
    content = RecordDict(
        {"arrays": ArrayRecord(arrays), "metrics": MetricRecord(metrics)}
    )
    return Message(content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    partition = int(context.node_config["partition-id"])
    server_round = int(msg.content["config"].get("server-round", 0))
    weights = msg.content["arrays"].to_numpy_ndarrays()
    model = strategy.client_model(weights, context.state)
    local = task.load_client(partition)["x_test"]
    _leave(f"clients_{server_round}_{partition}", task.predict(model, local))
    if hasattr(strategy, "task_model"):
        x_test, tasks = task.load_tests()
        if tasks is not None:
            _leave(f"tasks_{server_round}_{partition}",
                   _per_task(weights, context.state, x_test, tasks))  # fmt: skip
    return Message(
        RecordDict({"metrics": MetricRecord({"num-examples": 1})}), reply_to=msg
    )


def _per_task(weights, state, x_test, tasks) -> np.ndarray:
    """A strategy with one model per task (FedWeIT): each global test row
    predicted by the model of its task (known at test time)."""
    predicted = np.zeros(len(x_test), dtype=np.int64)
    for j in range(int(tasks.max()) + 1):
        rows = tasks == j
        predicted[rows] = task.predict(
            strategy.task_model(weights, state, j), x_test[rows]
        )
    return predicted


def _leave(name: str, predicted: np.ndarray) -> None:
    CLIENT_PREDICTIONS.mkdir(exist_ok=True)
    path = CLIENT_PREDICTIONS / f"{name}.npy"
    with open(f"{path}.tmp", "wb") as handle:
        np.save(handle, predicted)
    os.replace(f"{path}.tmp", path)

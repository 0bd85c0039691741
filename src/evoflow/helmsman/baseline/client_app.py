"""The clients of the baseline codebase: each round, the strategy module's
client side trains on this client's data; evaluation is on the client's
local test set with the model the strategy gives it."""

from __future__ import annotations

import strategy
import task
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

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
    arrays = task.load_client(int(context.node_config["partition-id"]))
    model = strategy.client_model(
        msg.content["arrays"].to_numpy_ndarrays(), context.state
    )
    loss, accuracy = task.evaluate(
        model, arrays["x_test"], arrays["y_test"].astype("int64")
    )
    # every client weighs 1: the aggregate is the average client accuracy
    metrics = {"client_accuracy": accuracy, "client_loss": loss, "num-examples": 1}
    if hasattr(strategy, "task_model"):
        metrics |= _per_task(msg.content["arrays"].to_numpy_ndarrays(), context.state)
    return Message(RecordDict({"metrics": MetricRecord(metrics)}), reply_to=msg)


def _per_task(weights, state) -> dict:
    """A strategy with one model per task (FedWeIT) is scored by each
    client on the global test set's part of every task, with that task's
    model: ``task_accuracy_<j>``."""
    x_test, y_test, tasks = task.load_tests()
    if tasks is None:
        return {}
    return {
        f"task_accuracy_{j}": task.evaluate(
            strategy.task_model(weights, state, j),
            x_test[tasks == j],
            y_test[tasks == j],
        )[1]
        for j in range(int(tasks.max()) + 1)
    }

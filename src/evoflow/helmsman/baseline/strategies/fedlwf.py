"""FedLwF (Learning without Forgetting, Li & Hoiem 2017, run under FedAvg):
when a continual task's next task begins, each client keeps the global model
it receives as its teacher; while training on the new task it also matches
the teacher's softened outputs (``distill`` × T² × KL at T = 2) on the new
data, so what the model knew of earlier tasks is not overwritten."""

from __future__ import annotations

import task
from flwr.app import ArrayRecord, ConfigRecord
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "fedlwf"


def build_strategy(config: dict) -> Strategy:
    return FedAvg(**task.sampling(config))


def client_train(weights, x, y, config, server_round, partition, state, sent):
    tasks = len(task.meta().get("tasks") or [[]])
    current = task.current_task(server_round, int(config["rounds"]), tasks)
    seen = state.config_records.get("lwf")
    if seen is None or int(seen["task"]) != current:
        state["teacher"] = ArrayRecord(weights)  # the model as the new task begins
        state["lwf"] = ConfigRecord({"task": current})
    teacher = state["teacher"].to_numpy_ndarrays() if current > 0 else None
    trained, loss, _ = task.local_sgd(weights, x, y, config, server_round, partition,
                                      teacher=teacher)  # fmt: skip
    return trained, {"train_loss": loss, "num-examples": len(y)}


def client_model(weights, state):
    return weights

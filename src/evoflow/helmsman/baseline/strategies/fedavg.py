"""FedAvg (McMahan et al., 2017): clients run local SGD from the global
model; the server averages their models weighted by their sample counts.

A strategy module holds both sides of its algorithm: ``build_strategy`` (the
server's Flower strategy), ``client_train`` (what a client does with the
global model) and ``client_model`` (the model a client is evaluated with).
"""

from __future__ import annotations

import task
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "fedavg"


def build_strategy(config: dict) -> Strategy:
    return FedAvg(**task.sampling(config))


def client_train(weights, x, y, config, server_round, partition, state, sent):
    """(arrays to send, metrics); ``sent`` is the server's ConfigRecord and
    ``state`` the client's own RecordDict, kept across rounds."""
    trained, loss, _ = task.local_sgd(weights, x, y, config, server_round, partition)
    return trained, {"train_loss": loss, "num-examples": len(y)}


def client_model(weights, state):
    return weights

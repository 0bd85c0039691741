"""FedPer (Arivazhagan et al., 2019): the hidden layer is shared and
averaged; each client keeps its own output layer (the personal head), which
never leaves it. Clients are evaluated with their personal models."""

from __future__ import annotations

import task
from flwr.app import ArrayRecord
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "fedper"
SHARED = 2  # W1 and b1; W2 and b2 are the head


def build_strategy(config: dict) -> Strategy:
    return FedAvg(**task.sampling(config))


def client_model(weights, state):
    """The global shared layer under this client's head (the global head
    until the client has trained once)."""
    if "head" not in state.array_records:
        return weights
    return list(weights[:SHARED]) + state.array_records["head"].to_numpy_ndarrays()


def client_train(weights, x, y, config, server_round, partition, state, sent):
    start = client_model(weights, state)
    trained, loss, _ = task.local_sgd(start, x, y, config, server_round, partition)
    state["head"] = ArrayRecord(trained[SHARED:])
    # the head is sent back unchanged: only the shared layer is averaged
    return trained[:SHARED] + list(weights[SHARED:]), {
        "train_loss": loss,
        "num-examples": len(y),
    }

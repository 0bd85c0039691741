"""FedProx (Li et al., 2020): FedAvg whose clients add the proximal term
μ/2·‖w − w_global‖² to their local objective (μ from the run's settings,
sent by the server as ``proximal-mu``)."""

from __future__ import annotations

import task
from flwr.serverapp.strategy import FedProx, Strategy

NAME = "fedprox"


def build_strategy(config: dict) -> Strategy:
    return FedProx(
        proximal_mu=float(config.get("proximal_mu", 0.01)), **task.sampling(config)
    )


def client_train(weights, x, y, config, server_round, partition, state, sent):
    mu = float(sent.get("proximal-mu", 0.0))
    trained, loss, _ = task.local_sgd(
        weights, x, y, config, server_round, partition, mu=mu
    )
    return trained, {"train_loss": loss, "num-examples": len(y)}


def client_model(weights, state):
    return weights

"""FedNova (Wang et al., 2020): normalised averaging for clients that take
different numbers of local steps τ_i. Each client sends its update
Δ_i = w_global − w_i and τ_i; the server steps by
τ_eff · Σ p_i Δ_i / τ_i with p_i = n_i / n and τ_eff = Σ p_i τ_i. With equal
τ_i this is FedAvg exactly."""

from __future__ import annotations

import numpy as np
import task
from flwr.app import ArrayRecord, MetricRecord
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "fednova"


class FedNova(FedAvg):
    def configure_train(self, server_round, arrays, config, grid):
        self._global = arrays.to_numpy_ndarrays()
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        valid, _ = self._check_and_log_replies(replies, is_train=True)
        if not valid:
            return None, None
        counts = np.array([float(m.content["metrics"]["num-examples"]) for m in valid])
        if counts.sum() == 0:  # nobody trained on anything: the model stays
            return ArrayRecord(self._global), MetricRecord({"train_loss": 0.0})
        taus = np.array([float(m.content["metrics"]["steps"]) for m in valid])
        shares = counts / counts.sum()
        tau_eff = float((shares * taus).sum())
        updates = [m.content["arrays"].to_numpy_ndarrays() for m in valid]
        merged = [
            g
            - tau_eff
            * sum(p * u[i] / t for p, u, t in zip(shares, updates, taus, strict=True))
            for i, g in enumerate(self._global)
        ]
        loss = float(
            (shares * [m.content["metrics"]["train_loss"] for m in valid]).sum()
        )
        return ArrayRecord([a.astype(np.float32) for a in merged]), MetricRecord(
            {"train_loss": loss}
        )


def build_strategy(config: dict) -> Strategy:
    return FedNova(**task.sampling(config))


def client_train(weights, x, y, config, server_round, partition, state, sent):
    trained, loss, steps = task.local_sgd(
        weights, x, y, config, server_round, partition
    )
    update = [g - w for g, w in zip(weights, trained, strict=True)]
    return update, {"train_loss": loss, "num-examples": len(y), "steps": steps}


def client_model(weights, state):
    return weights

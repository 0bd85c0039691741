"""HeteroFL (Diao et al., 2021): client k trains the sub-model made of the
first ⌈r_k·H⌉ hidden units (r_k its width, 1, 1/2 or 1/4, from the task's
``client_width``); the server averages every weight over the clients whose
sub-model holds it (weighted by sample counts) and keeps the rest."""

from __future__ import annotations

import math

import numpy as np
import task
from flwr.app import ArrayRecord, MetricRecord
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "heterofl"


class HeteroFL(FedAvg):
    def configure_train(self, server_round, arrays, config, grid):
        self._global = arrays.to_numpy_ndarrays()
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        valid, _ = self._check_and_log_replies(replies, is_train=True)
        if not valid:
            return None, None
        sums = [np.zeros_like(g, dtype=np.float64) for g in self._global]
        mass = [np.zeros_like(g, dtype=np.float64) for g in self._global]
        for message in valid:
            n = float(message.content["metrics"]["num-examples"])
            for i, part in enumerate(message.content["arrays"].to_numpy_ndarrays()):
                region = tuple(slice(0, d) for d in part.shape)
                sums[i][region] += n * part
                mass[i][region] += n
        merged = [np.where(m > 0, s / np.maximum(m, 1e-12), g).astype(np.float32)
                  for s, m, g in zip(sums, mass, self._global, strict=True)]  # fmt: skip
        counts = [float(m.content["metrics"]["num-examples"]) for m in valid]
        losses = [float(m.content["metrics"]["train_loss"]) for m in valid]
        loss = float(np.average(losses, weights=counts)) if sum(counts) else 0.0
        return ArrayRecord(merged), MetricRecord({"train_loss": loss})


def build_strategy(config: dict) -> Strategy:
    return HeteroFL(**task.sampling(config))


def width(config: dict, partition: int) -> int:
    rates = task.meta().get("client_width") or [1.0]
    return max(
        1, math.ceil(float(rates[partition % len(rates)]) * int(config["hidden"]))
    )


def client_train(weights, x, y, config, server_round, partition, state, sent):
    small = task.narrow(weights, width(config, partition))
    trained, loss, _ = task.local_sgd(small, x, y, config, server_round, partition)
    return trained, {"train_loss": loss, "num-examples": len(y)}


def client_model(weights, state):
    return weights

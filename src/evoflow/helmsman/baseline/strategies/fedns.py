"""FedNS (Li et al., 2024, Federated Noise-Sifting), on FedAvg: in the first
round every client, after its local training, sends one number besides its
model: the mean over its batches of the L1 norm of the last layer's weight
gradient of a label-free loss (``last_layer_norm``). The server splits the clients
in two by 1-D 2-means on those numbers, once; the group with the smaller
norms is taken as the noisy one. From then on it averages the clients'
models with weight β = 0.1 for a noisy client and α = 1.5 for a clean one
(the authors' FedAvg settings), normalised to sum to one; a client it has
never scored counts as clean. Only the scalar leaves a client, never its
samples' norms.
"""

from __future__ import annotations

from logging import INFO

import numpy as np
import task
from flwr.app import ArrayRecord, MetricRecord
from flwr.common.logger import log
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "fedns"
CLEAN, NOISY = 1.5, 0.1


def two_means(values: list[float]) -> list[bool]:
    """Exact 1-D 2-means: the split of the sorted values with the least
    within-group sum of squares; True for the members of the lower group.
    All equal (or fewer than two): nobody is in the lower group."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    if len(ranked) < 2 or ranked[0] == ranked[-1]:
        return [False] * len(values)
    costs = [ranked[:k].var() * k + ranked[k:].var() * (len(ranked) - k)
             for k in range(1, len(ranked))]  # fmt: skip
    cut = 1 + int(np.argmin(costs))
    lower = np.zeros(len(values), dtype=bool)
    lower[order[:cut]] = True
    return lower.tolist()


class FedNS(FedAvg):
    """FedAvg whose average weighs the clients found noisy in round 1 down."""

    def __init__(self, **sampling):
        super().__init__(**sampling)
        self.noisy: set[int] | None = None

    def aggregate_train(self, server_round, replies):
        valid, _ = self._check_and_log_replies(replies, is_train=True)
        if not valid:
            return None, None
        metrics = [m.content["metrics"] for m in valid]
        if self.noisy is None and any("grad_norm" not in m for m in metrics):
            self.noisy = set()  # round 1 brought no scores: nobody is weighed down
        if self.noisy is None:
            lower = two_means([float(m["grad_norm"]) for m in metrics])
            self.noisy = {int(m["partition"]) for m, low in zip(metrics, lower, strict=True)
                          if low}  # fmt: skip
            log(INFO, "FedNS: clients taken as noisy: %s", sorted(self.noisy))
        weights = np.array([NOISY if int(m["partition"]) in self.noisy else CLEAN
                            for m in metrics])  # fmt: skip
        weights /= weights.sum()
        models = [m.content["arrays"].to_numpy_ndarrays() for m in valid]
        merged = [sum(w * model[i] for w, model in zip(weights, models, strict=True))
                  .astype(np.float32) for i in range(len(models[0]))]  # fmt: skip
        loss = float(weights @ [float(m["train_loss"]) for m in metrics])
        return ArrayRecord(merged), MetricRecord({"train_loss": loss})


def build_strategy(config: dict) -> Strategy:
    return FedNS(**task.sampling(config))


def last_layer_norm(weights, x: np.ndarray, batch: int) -> float:
    """The mean over the client's batches (in order) of the L1 norm of the
    gradient, with respect to the last layer's weight matrix W2, of a loss
    that needs no labels: the batch mean of Σ_c −log p_c (cross-entropy
    against the all-ones target). Per sample ∂/∂z = C·p − 1, so the batch's
    gradient is Hᵀ(C·P − 1)/B. Clean inputs give the larger norms."""
    if len(x) == 0:
        return 0.0
    norms = []
    for start in range(0, len(x), batch):
        hidden, probs = task.forward(weights, x[start : start + batch])
        delta = probs.shape[1] * probs - 1
        norms.append(float(np.abs(hidden.T @ delta / len(delta)).sum()))
    return float(np.mean(norms))


def client_train(weights, x, y, config, server_round, partition, state, sent):
    trained, loss, _ = task.local_sgd(weights, x, y, config, server_round, partition)
    metrics = {"train_loss": loss, "num-examples": len(y), "partition": partition}
    if server_round == 1:
        metrics["grad_norm"] = last_layer_norm(trained, x, int(config["batch"]))
    return trained, metrics


def client_model(weights, state):
    return weights

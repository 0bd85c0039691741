"""Aggregation strategies over adapter tensors (pure functions + a small ABC).

Fed-SE averages A and B matrices separately and unweighted; the weighted variant
scales each client by a weight (successful episodes, or samples as in FedIT).
Averaging is done in float64 and cast back, so the result does not depend on the
order of clients beyond float rounding of the inputs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import torch

State = dict[str, torch.Tensor]


def weighted_mean(states: Sequence[State], weights: Sequence[float]) -> State:
    """Element-wise sum of ``w_k · state_k`` with the weights normalised to 1."""
    if len(states) != len(weights):
        raise ValueError(f"{len(states)} adapters but {len(weights)} weights")
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be >= 0, got {list(weights)}")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError(
            f"weights sum to {total}; at least one client needs weight > 0"
        )
    result = {}
    for name, first in states[0].items():
        acc = torch.zeros(first.shape, dtype=torch.float64)
        for state, weight in zip(states, weights, strict=True):
            acc.add_(state[name], alpha=weight / total)  # no temporaries
        result[name] = acc.to(first.dtype)
    return result


def mean(states: Sequence[State]) -> State:
    """Unweighted element-wise mean (Fed-SE's server step)."""
    return weighted_mean(states, [1.0] * len(states))


class Strategy(ABC):
    """Turns the clients' adapters (and optional weights) into the global one."""

    name: str

    @abstractmethod
    def aggregate(
        self, states: Sequence[State], weights: Sequence[float] | None
    ) -> State: ...


class FedAvg(Strategy):
    name = "mean"

    def aggregate(self, states, weights=None):
        return mean(states)


class FedAvgWeighted(Strategy):
    name = "weighted"

    def aggregate(self, states, weights=None):
        if weights is None:
            raise ValueError("the weighted strategy needs one weight per client")
        return weighted_mean(states, weights)


STRATEGIES: dict[str, type[Strategy]] = {s.name: s for s in (FedAvg, FedAvgWeighted)}

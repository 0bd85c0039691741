"""Server momentum (FedAvgM, Hsu et al., 2019): the server treats the
clients' average minus the current global adapter as a pseudo-gradient step
Δ and keeps a velocity v ← β·v + Δ; the new global adapter is the current one
plus ``lr``·v. β = 0 and lr = 1 is plain averaging."""

from __future__ import annotations

import torch

from evoflow.fed.strategies import State


def momentum_step(current: State, averaged: State, velocity: State | None,
                  beta: float, lr: float = 1.0) -> tuple[State, State]:  # fmt: skip
    """(new global, new velocity); ``velocity`` None: zeros (the first round)."""
    if not 0 <= beta < 1:
        raise ValueError(f"server momentum must be in [0, 1), got {beta}")
    if lr <= 0:
        raise ValueError(f"server lr must be > 0, got {lr}")
    new, moved = {}, {}
    for name, start in current.items():
        step = averaged[name].to(torch.float64) - start.to(torch.float64)
        before = (
            velocity[name].to(torch.float64) if velocity else torch.zeros_like(step)
        )
        moved[name] = beta * before + step
        new[name] = (start.to(torch.float64) + lr * moved[name]).to(start.dtype)
    return new, {k: v.to(torch.float32) for k, v in moved.items()}

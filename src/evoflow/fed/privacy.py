"""Client-level differential privacy on the uplink (DP-FedAvg, McMahan et
al., 2018): each client's update — its adapter minus the global adapter it
started from — is clipped to L2 norm ``clip`` over all its tensors; the server
sums the clipped updates of the round, divides by the m clients sampled
for it (a client that did not answer is a zero update) and adds Gaussian noise
of standard deviation ``noise_multiplier · clip / m`` to every coordinate. ε
comes from Google's ``dp_accounting`` RDP accountant for neighbouring
federations that differ in one client replaced by another (the relation its
sampling-without-replacement analysis needs; the sum of clipped updates then
has sensitivity 2·clip, so the accountant sees noise multiplier σ/2):
``rounds`` compositions of the Gaussian mechanism, each on m of K clients
sampled without replacement (no sampling when m = K). The server step passes
m = K: it publishes each round's participants, so no subsampling discount
holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

import torch

from evoflow.fed.strategies import State


def update_norm(update: State) -> float:
    """L2 norm of an update over all its tensors."""
    return float(
        sum(float((t.to(torch.float64) ** 2).sum()) for t in update.values()) ** 0.5
    )


def clip_update(update: State, clip: float) -> tuple[State, float]:
    """The update scaled to norm at most ``clip``, and its norm before."""
    if clip <= 0:
        raise ValueError(f"dp clip must be > 0, got {clip}")
    norm = update_norm(update)
    factor = min(1.0, clip / norm) if norm > 0 else 1.0
    return {k: t.to(torch.float64) * factor for k, t in update.items()}, norm


def private_mean(updates: Sequence[State], clip: float, noise_multiplier: float,
                 generator: torch.Generator, divisor: int) -> State:  # fmt: skip
    """Sum of the clipped updates over the fixed ``divisor`` m (the number of
    clients sampled per round; one missing counts as a zero update, so m does
    not depend on who answered) plus N(0, (σ·clip/m)²) per coordinate."""
    if noise_multiplier < 0:
        raise ValueError(f"dp noise_multiplier must be >= 0, got {noise_multiplier}")
    if divisor < len(updates):
        raise ValueError(f"dp divisor {divisor} is below the {len(updates)} updates")
    clipped = [clip_update(u, clip)[0] for u in updates]
    std = noise_multiplier * clip / divisor
    out = {}
    for name in clipped[0]:
        total = sum(c[name] for c in clipped) / divisor
        noise = torch.randn(total.shape, generator=generator, dtype=torch.float64)
        out[name] = total + std * noise
    return out


def epsilon(noise_multiplier: float, rounds: int, clients: int, sampled: int,
            delta: float) -> float:  # fmt: skip
    """(ε, δ)-DP of ``rounds`` noisy rounds at the client level, from the RDP
    accountant in a child process (``evoflow.fed.accountant``; 120 s limit)."""
    if noise_multiplier <= 0:
        return float("inf")
    if not 0 < sampled <= clients:
        raise ValueError(f"sampled clients {sampled} must be in 1..{clients}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    request = json.dumps({"noise_multiplier": noise_multiplier, "rounds": rounds,
                          "clients": clients, "sampled": sampled, "delta": delta})  # fmt: skip
    try:
        done = subprocess.run([sys.executable, "-m", "evoflow.fed.accountant", request],
                              capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError("the privacy accountant took over 120 s") from None
    except subprocess.CalledProcessError as error:
        raise RuntimeError(
            f"the privacy accountant failed: {error.stderr[-2000:]}"
        ) from None
    return float(json.loads(done.stdout.strip().splitlines()[-1]))

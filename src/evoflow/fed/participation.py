"""Who takes part in a round: a sample of the clients (partial participation;
seeded in the simulation, from the OS in a deployment), and which of them
answered before the straggler deadline."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from evoflow.seeding import derive_seed


def sample_clients(
    clients: Sequence[str], fraction: float, seed: int | None, round: int
) -> list[str]:
    """``max(1, round(fraction·K))`` of the K clients, drawn without
    replacement from (seed, round) alone — or, with ``seed`` None, from the
    OS's randomness, which no one holding the config can redo — in the
    clients' own order."""
    if not 0 < fraction <= 1:
        raise ValueError(f"participation fraction must be in (0, 1], got {fraction}")
    count = max(1, math.floor(fraction * len(clients) + 0.5))
    if count == len(clients):
        return list(clients)
    draw = (random.SystemRandom() if seed is None
            else random.Random(derive_seed(seed, "participation", round)))  # fmt: skip
    chosen = set(draw.sample(list(clients), count))
    return [c for c in clients if c in chosen]


def on_time(
    seconds: Mapping[str, float], deadline: float | None
) -> tuple[list[str], list[str]]:
    """(clients that finished within ``deadline`` seconds, the stragglers);
    no deadline: everyone is on time."""
    if deadline is None:
        return list(seconds), []
    if deadline <= 0:
        raise ValueError(f"straggler deadline must be > 0 seconds, got {deadline}")
    late = [c for c, s in seconds.items() if s > deadline]
    return [c for c in seconds if c not in late], late

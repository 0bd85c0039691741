"""Seeds derived from names, so every random choice is reproducible on its own.

``derive_seed("exp", 0, "round", 3, "maze")`` always gives the same 63-bit integer,
independent of PYTHONHASHSEED, process and call order.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

import numpy as np


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any sequence of printable parts."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def rng(*parts: object) -> np.random.Generator:
    """A numpy generator seeded by ``derive_seed(*parts)``."""
    return np.random.default_rng(derive_seed(*parts))


def py_random(*parts: object) -> random.Random:
    """A ``random.Random`` seeded by ``derive_seed(*parts)``."""
    return random.Random(derive_seed(*parts))


def choose(items: list[str], n: int | None, *parts: object) -> list[str]:
    """``n`` items drawn without replacement, kept in their original order.

    ``n`` of None (or at least ``len(items)``) keeps them all.
    """
    if n is None or n >= len(items):
        return list(items)
    picked = set(py_random(*parts).sample(range(len(items)), n))
    return [item for i, item in enumerate(items) if i in picked]


def choose_stratified(
    items: list[str], n: int | None, stratum: Callable[[str], str], *parts: object
) -> list[str]:
    """``n`` items drawn so that every stratum keeps its share, in original order.

    Each stratum gets ``n`` times its share of ``items``, rounded down, and the
    items left over go to the strata with the largest remainders (ties: the
    larger stratum, then the name). Within a stratum the draw is ``choose``'s,
    seeded by ``parts`` and the stratum's name.
    """
    if n is None or n >= len(items):
        return list(items)
    groups: dict[str, list[str]] = {}
    for item in items:
        groups.setdefault(stratum(item), []).append(item)
    exact = {name: n * len(group) / len(items) for name, group in groups.items()}
    quota = {name: int(share) for name, share in exact.items()}
    by_remainder = sorted(
        groups, key=lambda g: (quota[g] - exact[g], -len(groups[g]), g)
    )
    for name in by_remainder[: n - sum(quota.values())]:
        quota[name] += 1
    picked = {
        item
        for name, group in groups.items()
        for item in choose(group, quota[name], *parts, name)
    }
    return [item for item in items if item in picked]

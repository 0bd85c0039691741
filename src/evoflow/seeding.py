"""Seeds derived from names, so every random choice is reproducible on its own.

``derive_seed("exp", 0, "round", 3, "maze")`` always gives the same 63-bit integer,
independent of PYTHONHASHSEED, process and call order.
"""

from __future__ import annotations

import hashlib
import random

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

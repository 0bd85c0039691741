"""Identify PEFT adapter folders by content."""

from __future__ import annotations

import functools
from pathlib import Path

from evoflow.provenance import sha256_file

WEIGHTS = "adapter_model.safetensors"


def adapter_digest(folder: str | Path) -> str:
    """sha256 of an adapter's weights file (what episodes record as adapter_sha256)."""
    weights = Path(folder) / WEIGHTS
    try:
        stat = weights.stat()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{folder}: no {WEIGHTS}; not a PEFT adapter folder"
        ) from None
    return _digest(str(weights.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    return sha256_file(path)


__all__ = ["WEIGHTS", "adapter_digest"]

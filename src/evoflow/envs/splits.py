"""Task splits: built from each environment's own rules, committed as JSON.

The files in ``data/splits/`` are the source of truth at run time; rebuilding
them must give the same bytes in any process (no hash order, no listdir order),
which a test checks under several PYTHONHASHSEED values.
"""

from __future__ import annotations

import json
from pathlib import Path

from evoflow.atomic import atomic_path
from evoflow.envs import env_class
from evoflow.envs.base import SPLITS, splits_path


def render_splits(name: str) -> str:
    """The exact text of ``data/splits/<name>.json``."""
    splits = env_class(name).build_splits()
    overlap = set(splits["train"]) & set(splits["test"])
    if overlap:
        raise ValueError(f"{name}: train and test share task ids {sorted(overlap)[:5]}")
    payload = {
        "env": name,
        "sizes": {s: len(splits[s]) for s in SPLITS},
        "splits": {s: list(splits[s]) for s in SPLITS},
    }
    return json.dumps(payload, indent=1) + "\n"


def write_splits(name: str, check: bool = False) -> tuple[Path, bool]:
    """Write (or with ``check``, only compare) a split file; return (path, changed)."""
    path = splits_path(name)
    text = render_splits(name)
    changed = not path.is_file() or path.read_text() != text
    if changed and not check:
        with atomic_path(path) as tmp:
            tmp.write_text(text)
    return path, changed

"""Task splits: built from each environment's own rules, committed as JSON.

Every environment has three splits (``SPLITS``): ``train`` (what methods learn
from), ``validation`` (where experiment settings are chosen) and ``test`` (where
results are reported; never used to choose anything). No two splits share a task
id, nor a task under another id: ``TextEnv.content_key`` says what a task is in
substance (TextCraft's goal item, Maze's layout with start and goal, ...), and
``render_splits`` refuses to write a file in which two splits share one.

The files in ``data/splits/`` are the source of truth at run time; rebuilding
them must give the same bytes in any process (no hash order, no listdir order),
which a test checks under several PYTHONHASHSEED values.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

from evoflow.atomic import atomic_path
from evoflow.envs import env_class
from evoflow.envs.base import SPLITS, splits_path

EXAMPLES = 5  # overlapping ids or keys quoted in an error


def check_disjoint(name: str, splits: dict[str, list[str]]) -> None:
    """Raise ``ValueError`` unless ``splits`` has exactly the splits of ``SPLITS``
    and no two of them share a task id or a content key."""
    if set(splits) != set(SPLITS):
        raise ValueError(
            f"{name}: build_splits gave splits {sorted(splits)}, not {list(SPLITS)}"
        )
    key = env_class(name).content_key
    keys = {s: {key(t): t for t in splits[s]} for s in SPLITS}
    for first, second in combinations(SPLITS, 2):
        shared = sorted(set(splits[first]) & set(splits[second]))
        if shared:
            raise ValueError(
                f"{name}: splits {first} and {second} share task ids "
                f"{shared[:EXAMPLES]} ({len(shared)} in all)"
            )
        same = sorted(set(keys[first]) & set(keys[second]))
        if same:
            pairs = [f"{keys[first][k]} ~ {keys[second][k]} ({k})" for k in same]
            raise ValueError(
                f"{name}: splits {first} and {second} share task content under "
                f"different ids: {'; '.join(pairs[:EXAMPLES])} ({len(same)} in all)"
            )


def render_splits(name: str) -> str:
    """The exact text of ``data/splits/<name>.json``."""
    splits = env_class(name).build_splits()
    check_disjoint(name, splits)
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

"""The data file of an AgentFL-Bench task: every client's arrays, the global
test set and a JSON description, in one ``.npz`` (what a codebase reads as
``data.npz``). Keys: ``x_train_<k>``, ``y_train_<k>``, ``x_test_<k>``,
``y_test_<k>`` per client k, ``labeled_<k>`` and ``task_ids_<k>`` where the task
has them, ``x_test``, ``y_test``, ``task_test`` (continual tasks) and ``meta``
(a JSON string with ``num_classes``, ``num_clients`` and the task's settings).
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evoflow.atomic import atomic_path


@dataclass
class ClientData:
    """One client's training data and its local test set."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    labeled: np.ndarray | None = None
    task_ids: np.ndarray | None = None


@dataclass
class FederatedData:
    """All clients, the global test set and a JSON-able description."""

    clients: list[ClientData]
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    meta: dict[str, Any]
    task_test: np.ndarray | None = None


# what reading a malformed .npz raises
UNREADABLE = (OSError, ValueError, TypeError, EOFError, zipfile.BadZipFile, zlib.error)
_FIELDS = ("x_train", "y_train", "x_test", "y_test", "labeled", "task_ids")


def save(data: FederatedData, path: str | Path) -> Path:
    """Write ``data`` as one .npz file, atomically (temp file, then os.replace)."""
    meta = {**data.meta, "num_classes": data.num_classes}
    meta["num_clients"] = len(data.clients)
    arrays = {"x_test": data.x_test, "y_test": data.y_test, "task_test": data.task_test}
    for k, client in enumerate(data.clients):
        arrays |= {f"{name}_{k}": getattr(client, name) for name in _FIELDS}
    arrays = {key: a for key, a in arrays.items() if a is not None}
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, meta=np.array(json.dumps(meta)), **arrays)
    return Path(path)


def load(path: str | Path) -> FederatedData:
    """Read a file written by ``save``; an unreadable file or one that lacks
    keys raises ValueError (a missing file, FileNotFoundError)."""
    if not Path(path).is_file():
        raise FileNotFoundError(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except UNREADABLE as exc:
        raise ValueError(f"{path}: not a readable .npz archive ({exc})") from exc
    try:
        meta = json.loads(str(arrays["meta"]))
        n_clients, n_cls = int(meta["num_clients"]), int(meta["num_classes"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: missing or bad key 'meta' ({exc!r})") from exc
    need = [f"{n}_{k}" for k in range(n_clients) for n in _FIELDS[:4]]
    if missing := [key for key in ["x_test", "y_test", *need] if key not in arrays]:
        raise ValueError(f"{path}: missing key(s) {missing[:8]}")
    clients = []
    for k in range(n_clients):
        clients.append(ClientData(**{n: arrays.get(f"{n}_{k}") for n in _FIELDS}))
    tests = arrays["x_test"], arrays["y_test"]
    return FederatedData(clients, *tests, n_cls, meta, arrays.get("task_test"))

"""A small federated digits task shared by the Helmsman tests."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from sklearn.datasets import load_digits


def digits_split(sizes: tuple[int, ...] | None = None) -> bytes:
    """Digits over 4 clients (80/20; IID, even or of the given sizes), in the
    baseline's npz layout."""
    digits = load_digits()
    x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:1437], order[1437:]
    arrays = {
        "x_test": x[test],
        "y_test": y[test],
        "meta": json.dumps({"num_classes": 10}),
    }
    parts = (
        np.split(train, np.cumsum(sizes)[:-1]) if sizes else np.array_split(train, 4)
    )
    for k, part in enumerate(parts):
        arrays[f"x_train_{k}"], arrays[f"y_train_{k}"] = x[part], y[part]
        local = test[k::4]
        arrays[f"x_test_{k}"], arrays[f"y_test_{k}"] = x[local], y[local]
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def digits_npz() -> bytes:
    return digits_split()


@pytest.fixture(scope="session")
def uneven_npz() -> bytes:
    """Clients of 100, 300, 500 and 537 samples."""
    return digits_split((100, 300, 500, 537))


@pytest.fixture()
def run_config() -> dict:
    return {"strategy": "fedavg", "clients": 4, "rounds": 8, "local_epochs": 1, "lr": 0.1,
            "batch": 32, "hidden": 32, "seed": 0, "fraction": 1.0}  # fmt: skip


@pytest.fixture()
def in_a_run(monkeypatch):
    """Flower messages may only be made inside a run: pretend to be in one."""
    from flwr.supercore.task_identity import TaskIdentity

    for field in ("_task_id", "_run_id", "_node_id"):
        monkeypatch.setattr(TaskIdentity, field, 1)

"""Helmsman's runs scored outside the generated code.

The sandbox receives a task's data without its test labels (``withhold``):
training arrays, test features and, for a continual task, each test row's
task (known at test time in the task-incremental setting). A codebase leaves
two files: ``predictions.npz``, the classes its models predict for the test
rows round by round, and ``model.npz``, the final global model's arrays in
order (``np.savez(path, *weights)``), which its ``task.predict(weights, x)``
turns into classes. The host scores the predictions on the labels it kept
(``history``) and, in a second sandboxed run that holds the codebase, the
saved model and the label-free data, checks that the saved model gives the
last round's predictions (``check_model``).

``predictions.npz`` keys (arrays of class indices, one per row):
``global_<r>`` for every round r = 0..R (0 = before training), the global
model on the global test rows; ``clients_<r>_<k>``, where a task is scored on
the clients' own models, client k's model on its local test rows;
``tasks_<r>_<k>``, where a client keeps one model per task, client k's
prediction of each global test row by the model of that row's task.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass

import numpy as np

from evoflow.helmsman import codebase
from evoflow.helmsman.datafile import UNREADABLE
from evoflow.sandbox import Limits, run_files

PREDICTIONS = "predictions.npz"
MODEL = "model.npz"
WITHHELD = re.compile(r"y_test(_\d+)?")
KEY = re.compile(r"(global|clients|tasks)_(0|[1-9]\d{0,5})(?:_(0|[1-9]\d{0,5}))?")
AGREE = 0.99  # share of rows the saved model must predict as the last round did
CHECK_LIMITS = Limits(seconds=60, memory_mb=4096, output_kb=8192)

PREDICT = """\
import numpy as np
import task

with np.load("model.npz", allow_pickle=False) as saved:
    weights = [saved[f"arr_{i}"] for i in range(len(saved.files))]
with np.load("data.npz", allow_pickle=False) as data:
    features = data["x_test"]
np.save("final.npy", np.asarray(task.predict(weights, features)))
"""


@dataclass(frozen=True)
class Labels:
    """What the host keeps: the global test labels, each client's local
    test labels, and each global test row's task (continual tasks)."""

    test: np.ndarray
    clients: tuple[np.ndarray, ...]
    tasks: np.ndarray | None


def withhold(data: bytes) -> tuple[bytes, Labels]:
    """A task's ``data.npz`` split into what the sandbox gets (every array
    but the test labels) and the labels the host keeps."""
    try:
        arrays = _arrays(data)
    except ValueError as error:
        raise ValueError(f"the task's data is {error}") from error
    if "y_test" not in arrays:
        raise ValueError("the task's data has no y_test")
    count = sum(1 for key in arrays if re.fullmatch(r"y_test_\d+", key))
    labels = Labels(arrays["y_test"].astype(np.int64),
                    tuple(arrays[f"y_test_{k}"].astype(np.int64) for k in range(count)),
                    arrays.get("task_test"))  # fmt: skip
    buffer = io.BytesIO()
    np.savez(buffer, **{k: a for k, a in arrays.items() if not WITHHELD.fullmatch(k)})
    return buffer.getvalue(), labels


@dataclass(frozen=True)
class Scores:
    """A run's rounds as scored by the host, the last round's global
    predictions, and why the predictions could not be scored (or None)."""

    rounds: list[dict]
    last: np.ndarray | None = None
    problem: str | None = None


def history(predictions: bytes | None, labels: Labels, rounds: int) -> Scores:
    """Per round: ``accuracy`` (the global model's), ``client_accuracy``
    (the mean over clients of their own models' local accuracy) where
    clients' predictions were left, ``task_accuracy`` (continual tasks: the
    accuracy on each task's rows; with per-task client models, their mean
    over clients, and ``accuracy`` their mean). Rounds run from 0 with no
    gap up to at most ``rounds``; a round with clients' predictions has every
    client's."""
    if predictions is None:
        return Scores([], problem=f"it wrote no {PREDICTIONS}")
    try:
        parsed = _parse(predictions, labels, rounds)
        _complete(parsed, len(labels.clients))
    except ValueError as error:
        return Scores([], problem=f"its {PREDICTIONS} cannot be scored: {error}")
    played = sorted(parsed["global"])
    records = [_record(r, parsed, labels) for r in played]
    return Scores(records, parsed["global"][played[-1]])


def _complete(parsed: dict[str, dict], clients: int) -> None:
    """Global predictions for rounds 0..R without a gap; every client's
    wherever a round has any client's."""
    played = sorted(parsed["global"])
    if not played:
        raise ValueError("it holds no global_<round> predictions")
    if missing := sorted(set(range(played[-1] + 1)) - set(played)):
        raise ValueError(f"global predictions are missing for round(s) {missing[:5]}")
    for kind in ("clients", "tasks"):
        for r, given in parsed[kind].items():
            if len(given) != clients:
                absent = sorted(set(range(clients)) - set(given))
                raise ValueError(f"round {r} has {kind}_ predictions but none for "
                                 f"client(s) {absent[:5]}")  # fmt: skip


def _arrays(payload: bytes) -> dict[str, np.ndarray]:
    """Every array of an .npz given as bytes; ValueError if it is unreadable."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except UNREADABLE as error:
        raise ValueError(f"not a readable .npz ({error})") from error


def _parse(payload: bytes, labels: Labels, rounds: int) -> dict[str, dict]:
    """Every array, checked: a known key of a round played, one integer class
    per row."""
    arrays = _arrays(payload)
    parsed: dict[str, dict] = {"global": {}, "clients": {}, "tasks": {}}
    for key, array in arrays.items():
        match = KEY.fullmatch(key)
        if not match or (match[1] == "global") != (match[3] is None):
            raise ValueError(f"unknown key {key!r}")
        kind, r, k = match[1], int(match[2]), int(match[3] or 0)
        if r > rounds:
            raise ValueError(f"{key!r} is past the last round ({rounds})")
        if kind != "global" and k >= len(labels.clients):
            raise ValueError(
                f"{key!r} names client {k}; there are {len(labels.clients)}"
            )
        rows = len(labels.clients[k]) if kind == "clients" else len(labels.test)
        if array.ndim != 1 or len(array) != rows:
            raise ValueError(f"{key!r} has shape {array.shape}; expected ({rows},)")
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"{key!r} holds {array.dtype}, not class indices")
        if kind == "tasks" and labels.tasks is None:
            raise ValueError(f"{key!r}: the task is not continual")
        target = parsed[kind] if kind == "global" else parsed[kind].setdefault(r, {})
        target[r if kind == "global" else k] = array.astype(np.int64)
    return parsed


def _record(r: int, parsed: dict, labels: Labels) -> dict:
    glob = parsed["global"][r]
    record = {"round": r, "accuracy": _accuracy(glob, labels.test)}
    if clients := parsed["clients"].get(r):
        record["client_accuracy"] = float(np.mean(
            [_accuracy(p, labels.clients[k]) for k, p in clients.items()]))  # fmt: skip
    if labels.tasks is not None:
        per_client = list(parsed["tasks"].get(r, {}).values()) or [glob]
        record["task_accuracy"] = [
            float(np.mean([_accuracy(p[rows], labels.test[rows]) for p in per_client]))
            for rows in (labels.tasks == j for j in range(int(labels.tasks.max()) + 1))
        ]
        if parsed["tasks"].get(r):
            record["accuracy"] = float(np.mean(record["task_accuracy"]))
    return record


def _accuracy(predicted: np.ndarray, truth: np.ndarray) -> float:
    return float((predicted == truth).mean()) if len(truth) else 0.0


def check_model(modules: dict[str, str], features: bytes, config: dict,
                model: bytes | None, last: np.ndarray | None) -> list[str]:  # fmt: skip
    """Problems with the saved final model: missing, unreadable, not finite,
    or, read by the codebase's own ``task.predict`` in a fresh sandbox that
    holds the codebase, the saved model, the label-free data and ``config``
    (the run's ``run_config.json``), not giving ``last``, the last round's
    global predictions, on at least ``AGREE`` of the rows."""
    if model is None:
        return [f"it saved no {MODEL} (the final global model's arrays)"]
    try:
        weights = list(_arrays(model).values())
    except ValueError as error:
        return [f"its {MODEL} is {error}"]
    if not weights or not all(
        np.isfinite(w).all() for w in weights if w.dtype.kind in "fc"
    ):
        return [f"the final model in {MODEL} has NaN or infinite weights (or none)"]
    files = {**modules, "program.py": PREDICT, MODEL: model, "data.npz": features,
             "run_config.json": json.dumps(config)}  # fmt: skip
    outcome, kept = run_files(files, CHECK_LIMITS, collect=("final.npy", "stderr"),
                              packages=codebase.PACKAGES)  # fmt: skip
    try:
        final = np.load(io.BytesIO(kept["final.npy"]), allow_pickle=False)
    except (KeyError, *UNREADABLE):
        error = kept.get("stderr", b"").decode("utf-8", "replace").strip()[-300:]
        return [f"task.predict on the saved {MODEL} failed ({outcome.status}): {error}"]
    if not (isinstance(final, np.ndarray) and final.ndim == 1
            and np.issubdtype(final.dtype, np.integer)):  # fmt: skip
        return [f"task.predict on the saved {MODEL} gave no class index per row"]
    if last is not None:
        same = final.shape == last.shape and (final == last).mean() >= AGREE
        if not same:
            differ = (
                int((final != last).sum()) if final.shape == last.shape else len(last)
            )
            return [f"task.predict on the saved {MODEL} disagrees with the last round's "
                    f"predictions on {differ} of {len(last)} test rows"]  # fmt: skip
    return []

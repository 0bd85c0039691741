"""AgentFL-Bench: the 16 Helmsman tasks (Q1-Q16) read from ``tasks.yaml``.

Each task carries the paper-scale setup (``paper``), the metric, the paper's
specialised baseline, the offline substitute that ``partitions.build`` makes,
and the paper's contradictions for that task (``flags``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from evoflow.helmsman.partitions import PARTITIONS

METRICS = ("global_accuracy", "client_accuracy", "task_accuracy")
SCENARIOS = ("cross-device", "cross-silo")


@dataclass(frozen=True)
class PaperSetup:
    """The run the paper describes; needs the real data set."""

    dataset: str
    model: str
    clients: int
    scenario: str
    rounds: int
    local_steps: int


@dataclass(frozen=True)
class Substitute:
    """The offline stand-in: a partition builder, its clients and parameters."""

    partition: str
    clients: int
    params: dict[str, Any]
    note: str


@dataclass(frozen=True)
class BenchTask:
    """One AgentFL-Bench query with its setup, metric and substitute."""

    id: str
    area: str
    challenge: str
    problem: str
    query: str
    paper: PaperSetup
    metric: str
    specialised: str | None
    substitute: Substitute
    flags: tuple[str, ...]


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _count(value: Any) -> bool:
    return type(value) is int and value > 0


def _partition(value: Any) -> bool:
    return isinstance(value, str) and value in PARTITIONS


_PAPER = {
    **dict.fromkeys(("dataset", "model"), _text),
    **dict.fromkeys(("clients", "rounds", "local_steps"), _count),
    "scenario": lambda v: v in SCENARIOS,
}
_SUBSTITUTE = {
    "partition": _partition,
    "clients": _count,
    "params": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
    "note": _text,
}
_TASK: dict[str, Any] = {
    "id": lambda v: isinstance(v, str) and re.fullmatch(r"Q[1-9][0-9]*", v),
    **dict.fromkeys(("area", "challenge", "problem", "query"), _text),
    "paper": _PAPER,
    "metric": lambda v: v in METRICS,
    "specialised": lambda v: v is None or _text(v),
    "substitute": _SUBSTITUTE,
    "flags": lambda v: isinstance(v, list) and all(_text(f) for f in v),
}


def _fields(raw: Any, schema: dict[str, Any], where: str, prefix: str = "") -> dict:
    """Check ``raw`` against ``schema`` (nested dicts = nested blocks)."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: {prefix.rstrip('.') or 'entry'} must be a mapping")
    unknown = sorted(str(k) for k in raw.keys() - schema.keys())
    if unknown:
        raise ValueError(f"{where}: unknown key {prefix + unknown[0]!r}")
    for key, check in schema.items():
        name = prefix + key
        if key not in raw:
            raise ValueError(f"{where}: missing key {name!r}")
        if isinstance(check, dict):
            raw = {**raw, key: _fields(raw[key], check, where, name + ".")}
        elif not check(raw[key]):
            raise ValueError(f"{where}: bad value for key {name!r}: {raw[key]!r}")
    return raw


def _task(raw: Any, index: int, source: str) -> BenchTask:
    task_id = raw.get("id", f"#{index}") if isinstance(raw, dict) else f"#{index}"
    f = _fields(raw, _TASK, f"{source}: task {task_id}")
    f["paper"] = PaperSetup(**f["paper"])
    f["substitute"] = Substitute(**f["substitute"])
    f["flags"] = tuple(f["flags"])
    return BenchTask(**f)


def load_tasks(path: str | Path | None = None) -> list[BenchTask]:
    """Read and validate the task table (default: the packaged ``tasks.yaml``)."""
    if path is None:
        source = "evoflow.helmsman/tasks.yaml"
        text = resources.files("evoflow.helmsman").joinpath("tasks.yaml").read_text()
    else:
        source, text = str(path), Path(path).read_text(encoding="utf-8")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: not valid YAML ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        raise ValueError(f"{source}: expected a mapping with a 'tasks' list")
    tasks = [_task(raw, i, source) for i, raw in enumerate(doc["tasks"], 1)]
    ids = [task.id for task in tasks]
    for task_id in sorted({i for i in ids if ids.count(i) > 1})[:1]:
        raise ValueError(f"{source}: task {task_id}: duplicate key 'id'")
    return tasks


def get_task(task_id: str) -> BenchTask:
    """The packaged task ``task_id``; KeyError lists the known ids."""
    tasks = {task.id: task for task in load_tasks()}
    if task_id not in tasks:
        raise KeyError(f"unknown task {task_id!r}; known: {', '.join(tasks)}")
    return tasks[task_id]

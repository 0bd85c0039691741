"""Experiment tracking: each job's parameters and metrics as an MLflow run.

Off by default, and off imports nothing. On (``tracking: {mlflow: true}`` in the
config), every training, RL span, aggregation and evaluation job logs one run,
nested experiment → method → round → job: the config's ``experiment`` is the
MLflow experiment, each method a run, each of its rounds a child of that run,
and each job (``train babyai``, ``aggregate``, ``evaluate``, ``rl span``) a
child of its round. A job that runs again replaces its run.

The store is a SQLite file beside the artifacts (``results/<experiment>/
mlflow.db``: no server) unless ``tracking.uri`` names another, e.g. a shared
MLflow server. The artifacts stay the record: a job whose tracking fails logs
a warning and keeps its outputs, so a tracking server that is down never costs
a trained adapter.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)
LEVEL, METHOD, ROUND, JOB = (
    "evoflow.level",
    "evoflow.method",
    "evoflow.round",
    "evoflow.job",
)
PARENT = "mlflow.parentRunId"
HTTP_TIMEOUT_S = 30  # each request to a tracking server
LOCK_TIMEOUT_S = 120  # waiting for another job writing the same SQLite file
PARAM_CHARS = 6000  # MLflow's longest parameter value
UI_VERSION = "3.17.2"  # the UI that reads this client's store (mlflow-skinny's pin)


def enabled(config: dict) -> bool:
    """Whether ``config`` turns MLflow tracking on."""
    return bool((config.get("tracking") or {}).get("mlflow"))


def tracking_uri(config: dict, root: str | Path = ".") -> str:
    """``tracking.uri``, else the SQLite file under ``root``'s results folder."""
    uri = (config.get("tracking") or {}).get("uri")
    if uri:
        return uri
    db = Path(root).resolve() / "results" / config["experiment"] / "mlflow.db"
    return f"sqlite:///{db}"


Series = dict[str, list[tuple[int, float]]]  # metric -> (step, value) pairs


def record(config: dict, method: str, round: int, job: str, params: dict,
           metrics: dict, series: Series | None = None) -> str | None:  # fmt: skip
    """Log one job as a run under (experiment, method, round); its run id.

    ``params`` and ``metrics`` may nest (keys joined with ``.``); non-numeric
    metrics are left out. ``series`` maps a metric to its (step, value) pairs
    (a loss curve, an RL span's per-step statistics). Returns None when
    tracking is off or failed (a warning says why).
    """
    if not enabled(config):
        return None
    uri = tracking_uri(config)
    try:
        with _exclusive(uri):
            return _log(uri, config["experiment"], method, round, job,
                        params, metrics, series or {})  # fmt: skip
    except Exception as exc:  # the job's artifacts are written: keep them
        log.warning("tracking: %s %s round %s not logged to %s: %s",
                    method, job, round, uri, exc)  # fmt: skip
        return None


def curve(values: list[float]) -> list[tuple[int, float]]:
    """A per-step list (e.g. ``loss_curve``) as (step, value) pairs from 1."""
    return list(enumerate(values, start=1))


def training(summary: dict) -> tuple[dict, Series]:
    """An SFT job's ``training.json`` summary as (metrics, series): its loss
    curve as the ``loss`` series, its settings left to the parameters."""
    metrics = {k: v for k, v in summary.items() if k not in ("loss_curve", "config")}
    return metrics, {"loss": curve(summary["loss_curve"])}


def step_series(rows: list[dict], step: str = "step") -> Series:
    """Per-step rows (an RL or SAGE span's ``steps``) as one series per numeric
    key, at each row's ``step`` (its position from 1 where it has none)."""
    series: Series = {}
    for i, row in enumerate(rows, start=1):
        at = row.get(step, i)
        for key, value in _numbers(row).items():
            if key != step:
                series.setdefault(key, []).append((at, value))
    return series


def ui_command(config: dict, root: str | Path = ".") -> str:
    """How to browse the runs: the MLflow UI (its server is not an evoflow
    dependency: it runs from an environment of its own)."""
    uri, venv = tracking_uri(config, root), "~/.cache/evoflow/mlflow-ui"
    return (
        f"python3 -m venv {venv} && {venv}/bin/pip install mlflow=={UI_VERSION}\n"
        f"{venv}/bin/mlflow ui --backend-store-uri {uri}"
    )


def _log(uri, experiment, method, round, job, params, metrics, series) -> str:
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(HTTP_TIMEOUT_S))
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    exp = found.experiment_id if found else client.create_experiment(experiment)
    top = _child(client, exp, None, {LEVEL: "method", METHOD: method}, method)
    mid = _child(client, exp, top, {LEVEL: "round", METHOD: method, ROUND: str(round)},
                 f"{method} round {round}")  # fmt: skip
    tags = {LEVEL: "job", METHOD: method, ROUND: str(round), JOB: job}
    for old in _find(client, exp, tags):
        client.delete_run(old.info.run_id)
    run = client.create_run(exp, run_name=job, tags={**tags, PARENT: mid})
    now = int(time.time() * 1000)
    values = [Metric(k, v, now, 0) for k, v in _numbers(metrics).items()]
    values += [Metric(k, float(v), now, int(step))
               for k, curve in series.items() for step, v in curve]  # fmt: skip
    texts = [Param(k, str(v)[:PARAM_CHARS]) for k, v in _flat(params).items()]
    for start in range(0, max(len(values), len(texts)), 100):  # MLflow's batch limits
        client.log_batch(run.info.run_id, metrics=values[start : start + 100],
                         params=texts[start : start + 100])  # fmt: skip
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def _child(client, exp: str, parent: str | None, tags: dict, name: str) -> str:
    """The run carrying ``tags`` (created the first time)."""
    runs = _find(client, exp, tags)
    if runs:
        return runs[0].info.run_id
    extra = {PARENT: parent} if parent else {}
    return client.create_run(exp, run_name=name, tags={**tags, **extra}).info.run_id


def _find(client, exp: str, tags: dict) -> list:
    query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
    return client.search_runs([exp], filter_string=query, max_results=1000)


def _flat(values: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _numbers(values: dict) -> dict[str, float]:
    return {k: float(v) for k, v in _flat(values).items()
            if isinstance(v, int | float) and not isinstance(v, bool)}  # fmt: skip


@contextmanager
def _exclusive(uri: str) -> Iterator[None]:
    """One job at a time writes a local SQLite store (a lock file beside it);
    a server orders its own writes."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri.removeprefix("sqlite:///"))
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_suffix(".lock"), "w") as lock:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{db}: locked by another job for "
                                       f"{LOCK_TIMEOUT_S} s") from None  # fmt: skip
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

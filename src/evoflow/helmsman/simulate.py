"""One sandboxed run of a Flower codebase and its diagnosis."""

from __future__ import annotations

from dataclasses import dataclass

from evoflow.helmsman import codebase
from evoflow.helmsman.diagnose import Diagnosis, Thresholds, diagnose
from evoflow.sandbox import Limits, Outcome, run_files

LIMITS = Limits(seconds=300, memory_mb=4096, output_kb=8192)
KEPT = ("metrics.json", "stdout", "stderr")


@dataclass(frozen=True)
class Simulation:
    """What a run left: its outcome, whole log, metrics and diagnosis."""

    outcome: Outcome
    log: str
    metrics: bytes | None
    diagnosis: Diagnosis


def simulate(modules: dict[str, str], data: bytes, config: dict,
             limits: Limits = LIMITS, thresholds: Thresholds | None = None) -> Simulation:  # fmt: skip
    """Run ``modules`` (a codebase) on ``data`` (a task's ``data.npz``) with
    ``config`` (its ``run_config.json``; ``rounds`` is required, ``continual``
    marks a sequence of tasks, ``watch`` the accuracy to judge) in the sandbox. A codebase that lacks a module
    is diagnosed, not raised."""
    if "rounds" not in config:
        raise ValueError("a simulation's config needs 'rounds'")
    try:
        files = codebase.project(modules, data, config)
    except ValueError as error:
        outcome = Outcome("crashed", 0, 0, 0.0, None, "", str(error), False)
        verdict = Diagnosis("FAIL", 1, (str(error),))
        return Simulation(outcome, str(error), None, verdict)
    outcome, kept = run_files(files, limits, collect=KEPT)
    log = "\n".join(
        kept.get(name, b"").decode("utf-8", "replace") for name in ("stdout", "stderr")
    )
    metrics = kept.get("metrics.json")
    verdict = diagnose(outcome, log, metrics, int(config["rounds"]),
                       thresholds or Thresholds(), bool(config.get("continual")),
                       config.get("watch", "accuracy"))  # fmt: skip
    return Simulation(outcome, log, metrics, verdict)

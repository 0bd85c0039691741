"""One sandboxed run of a Flower codebase, scored by the host on the test
labels it withheld (``scoring``), and its diagnosis."""

from __future__ import annotations

import json
from dataclasses import dataclass

from evoflow.helmsman import codebase, scoring
from evoflow.helmsman.diagnose import Diagnosis, Thresholds, diagnose
from evoflow.sandbox import Limits, Outcome, run_files

LIMITS = Limits(seconds=300, memory_mb=4096, output_kb=8192)
KEPT = (scoring.PREDICTIONS, scoring.MODEL, "stdout", "stderr")


@dataclass(frozen=True)
class Simulation:
    """What a run left: its outcome, whole log, the rounds the host scored
    (``metrics.json`` bytes: ``{"rounds": [...]}``, None where none were) and
    its diagnosis, and the final global model it saved (``model.npz`` bytes)."""

    outcome: Outcome
    log: str
    metrics: bytes | None
    diagnosis: Diagnosis
    model: bytes | None = None


def simulate(modules: dict[str, str], data: bytes, config: dict,
             limits: Limits = LIMITS, thresholds: Thresholds | None = None) -> Simulation:  # fmt: skip
    """Run ``modules`` (a codebase) on ``data`` (a task's ``data.npz``, test
    labels included: the sandbox gets it without them) with ``config`` (its
    ``run_config.json``; ``rounds`` is required, ``continual`` marks a
    sequence of tasks, ``watch`` the accuracy to judge) in the sandbox, and
    score what it predicted. A codebase that lacks a module is diagnosed, not
    raised."""
    if "rounds" not in config:
        raise ValueError("a simulation's config needs 'rounds'")
    features, labels = scoring.withhold(data)
    try:
        files = codebase.project(modules, features, config)
    except ValueError as error:
        outcome = Outcome("crashed", 0, 0, 0.0, None, "", str(error), False)
        verdict = Diagnosis("FAIL", 1, (str(error),))
        return Simulation(outcome, str(error), None, verdict)
    outcome, kept = run_files(files, limits, collect=KEPT, packages=codebase.PACKAGES)
    log = "\n".join(
        kept.get(name, b"").decode("utf-8", "replace") for name in ("stdout", "stderr")
    )
    scores = scoring.history(
        kept.get(scoring.PREDICTIONS), labels, int(config["rounds"])
    )
    unscored = [scores.problem] if scores.problem else []
    if not unscored and outcome.status == "passed":
        model = kept.get(scoring.MODEL)
        unscored = scoring.check_model(modules, features, config, model, scores.last)
    metrics = json.dumps({"rounds": scores.rounds}).encode() if scores.rounds else None
    verdict = diagnose(outcome, log, metrics, int(config["rounds"]),
                       thresholds or Thresholds(), bool(config.get("continual")),
                       config.get("watch", "accuracy"), tuple(unscored))  # fmt: skip
    return Simulation(outcome, log, metrics, verdict, kept.get(scoring.MODEL))

"""Phase 3: simulate → diagnose → repair, until the run passes or the budget
of repair attempts is spent.

Attempt 0 runs the codebase as written; attempt n ≥ 1 first asks the
Debugger to repair attempt n − 1 from its diagnosis, then runs the result.
Each attempt is one folder, ``attempt=<n>/`` (its code, whole log, metrics
and diagnosis), written atomically; the budget is counted from those folders,
so a job killed mid-loop resumes at the attempt after the last one written,
and a task whose ``status.json`` exists is never redone. A Debugger reply that
cannot be used, or a failed LLM call, spends its attempt (recorded with the
reason; the code is not run again unchanged).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from evoflow.atomic import write_json
from evoflow.helmsman import agents, codebase
from evoflow.helmsman.agents import ReplyError
from evoflow.helmsman.diagnose import Diagnosis
from evoflow.helmsman.llm import AgentLLM
from evoflow.helmsman.simulate import LIMITS, simulate
from evoflow.policy.base import PolicyError
from evoflow.sandbox import Limits

BUDGET = 10  # repair attempts (the paper's T_max)
LOG_TAIL = 3000  # characters of the log shown to the Debugger


def refine(folder: Path, modules: dict[str, str], data: bytes, config: dict, llm: AgentLLM,
           budget: int = BUDGET, limits: Limits = LIMITS, judge: str | None = None) -> dict:  # fmt: skip
    """Run the loop in ``folder``; returns (and writes) ``status.json``.
    With ``judge`` (the approved plan), an LLM judge also reviews every run
    the deterministic diagnosis passes, against the plan."""
    folder = Path(folder)
    status_file = folder / "status.json"
    if status_file.exists():
        return json.loads(status_file.read_text())
    number, record = _last_attempt(folder)
    while record is None or (
        record["diagnosis"]["verdict"] != "SUCCESS" and number < budget
    ):
        number = 0 if record is None else number + 1
        if number > 0:
            modules = codebase.load(folder / f"attempt={number - 1}" / "code")
        record = _attempt(
            folder, number, modules, data, config, llm, limits, record, judge
        )
    verdict = (
        "SUCCESS" if record["diagnosis"]["verdict"] == "SUCCESS" else "FAIL_BUDGET"
    )
    status = {"status": verdict, "repairs": number, "budget": budget,
              "accuracy": record["accuracy"], "final": record["diagnosis"]}  # fmt: skip
    write_json(status_file, status)
    return json.loads(status_file.read_text())


def _attempt(
    folder, number, modules, data, config, llm, limits, previous, plan
) -> dict:
    """Repair (from attempt ≥ 1 on), run, diagnose, and save one attempt."""
    diagnosis, log, metrics, seconds = None, "", None, 0.0
    if previous is not None:
        try:
            reply = llm.ask("debugger", agents.debugger(
                modules, previous["report"], previous["log_tail"]))  # fmt: skip
            modules = {**modules, **agents.parse_patch(reply)}
        except (ReplyError, PolicyError) as error:
            log = f"the repair could not be used: {error}"
            diagnosis = Diagnosis("FAIL", 1, (log,))
    if diagnosis is None:
        run = simulate(modules, data, config, limits)
        diagnosis, log, metrics, seconds = (
            run.diagnosis,
            run.log,
            run.metrics,
            run.outcome.seconds,
        )
        if diagnosis.ok and plan is not None:
            diagnosis = _judge(llm, plan, modules, metrics)
    record = {"attempt": number, "diagnosis": asdict(diagnosis), "report": diagnosis.report(),
              "log_tail": log[-LOG_TAIL:], "seconds": seconds, "repaired": previous is not None,
              "accuracy": _final_accuracy(metrics)}  # fmt: skip
    _save(folder / f"attempt={number}", modules, log, metrics, record)
    return record


def _judge(
    llm: AgentLLM, plan: str, modules: dict[str, str], metrics: bytes
) -> Diagnosis:
    """The optional LLM judge on a run the deterministic checks passed: FAIL
    sends it back to the Debugger; an unusable reply leaves the verdict."""
    try:
        reply = llm.ask("judge", agents.judge(plan, modules, metrics.decode()))
        passed, reason = agents.parse_judgement(reply)
    except (ReplyError, PolicyError):
        return Diagnosis("SUCCESS", None)
    return (
        Diagnosis("SUCCESS", None)
        if passed
        else Diagnosis("FAIL", 2, (f"the judge: {reason}",))
    )


def _save(target: Path, modules, log: str, metrics: bytes | None, record: dict) -> None:
    """Write an attempt's folder whole or not at all."""
    scratch = target.with_name(f".{target.name}.partial")
    shutil.rmtree(scratch, ignore_errors=True)
    codebase.save(modules, scratch / "code")
    (scratch / "log.txt").write_text(log)
    if metrics is not None:
        (scratch / "metrics.json").write_bytes(metrics)
    (scratch / "attempt.json").write_text(json.dumps(record, indent=1))
    os.replace(scratch, target)


def _last_attempt(folder: Path) -> tuple[int, dict | None]:
    done = sorted(int(p.name.split("=")[1]) for p in folder.glob("attempt=*")
                  if (p / "attempt.json").exists())  # fmt: skip
    if not done:
        return -1, None
    return done[-1], json.loads(
        (folder / f"attempt={done[-1]}" / "attempt.json").read_text()
    )


def attempts(folder: Path) -> list[dict]:
    """Every saved attempt's record, in order."""
    paths = sorted(Path(folder).glob("attempt=*/attempt.json"),
                   key=lambda p: int(p.parent.name.split("=")[1]))  # fmt: skip
    return [json.loads(p.read_text()) for p in paths]


def _final_accuracy(metrics: bytes | None) -> float | None:
    try:
        return float(json.loads(metrics)["rounds"][-1]["accuracy"]) if metrics else None
    except (ValueError, KeyError, IndexError, TypeError):
        return None

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

import hashlib
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
    inputs = _inputs(modules, data, config, judge)
    number, record = _last_attempt(folder, inputs)
    while record is None or (
        record["diagnosis"]["verdict"] != "SUCCESS" and number < budget
    ):
        number = 0 if record is None else number + 1
        if number > 0:
            modules = codebase.load(folder / f"attempt={number - 1}" / "code")
        record = _attempt(folder, number, modules, (data, config, inputs), llm, limits,
                          record, judge)  # fmt: skip
    verdict = (
        "SUCCESS" if record["diagnosis"]["verdict"] == "SUCCESS" else "FAIL_BUDGET"
    )
    status = {"status": verdict, "repairs": number, "budget": budget,
              "accuracy": record["accuracy"], "final": record["diagnosis"]}  # fmt: skip
    write_json(status_file, status)
    return json.loads(status_file.read_text())


def _attempt(folder, number, modules, run_inputs, llm, limits, previous, plan) -> dict:
    """Repair (from attempt ≥ 1 on), run, diagnose, and save one attempt;
    ``run_inputs`` is (data, config, the loop's inputs hash)."""
    data, config, inputs = run_inputs
    diagnosis, log, metrics, seconds = None, "", None, 0.0
    if previous is not None:
        try:
            reply = llm.ask("debugger", agents.debugger(
                modules, previous["report"], previous["log_tail"], number))  # fmt: skip
            modules = {**modules, **agents.parse_patch(reply)}
        except (ReplyError, PolicyError) as error:
            # the code is unchanged: keep the last run's problems and log for the next try
            reason = f"the repair could not be used: {error}"
            before = tuple(previous["diagnosis"]["problems"])
            diagnosis = Diagnosis(
                "FAIL", previous["diagnosis"]["level"] or 1, (reason, *before)
            )
            log = previous["log_tail"] + f"\n{reason}"
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
              "accuracy": _final_accuracy(metrics), "inputs": inputs}  # fmt: skip
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


def _inputs(
    modules: dict[str, str], data: bytes, config: dict, judge: str | None
) -> str:
    """What a loop starts from, hashed: attempts of another start are not resumed."""
    blob = json.dumps([modules, config, judge], sort_keys=True).encode() + data
    return hashlib.sha256(blob).hexdigest()


def _last_attempt(folder: Path, inputs: str) -> tuple[int, dict | None]:
    """The last attempt saved for these inputs; attempts left by a loop that
    started from other code, data or settings are removed."""
    saved = attempts(folder)
    if saved and saved[0].get("inputs") != inputs:
        for path in folder.glob("attempt=*"):
            shutil.rmtree(path)
        saved = []
    return (saved[-1]["attempt"], saved[-1]) if saved else (-1, None)


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

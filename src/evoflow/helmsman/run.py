"""The Helmsman rules' work, one function per rule: a task's substitute
data, a baseline run, and the agents' three phases (plan, code, refine) and
the benchmark run of their final codebase. Each reads and writes files only,
so every phase caches and resumes on its own; an LLM call log per task
(``calls.jsonl``) replays earlier calls for free and counts tokens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evoflow.atomic import atomic_path, write_json
from evoflow.helmsman import benchmark, codebase, datafile, partitions
from evoflow.helmsman.approval import make_approver
from evoflow.helmsman.bench import get_task
from evoflow.helmsman.benchmark import BenchSettings
from evoflow.helmsman.coding import write_codebase
from evoflow.helmsman.llm import AgentLLM
from evoflow.helmsman.plan import plan_task
from evoflow.helmsman.refine import attempts, refine
from evoflow.policy import Policy
from evoflow.store.query import TABLE_FILES

ATTEMPTS_FILE = TABLE_FILES["helmsman_attempts"]


def make_data(task_id: str, seeds: list[int], outputs: list[Path],
              source: Path | None = None) -> None:  # fmt: skip
    """The task's offline substitute for each seed, or the user's own data
    file (checked, then copied; its split is fixed) when ``source`` is given."""
    for seed, output in zip(seeds, outputs, strict=True):
        data = (
            datafile.load(source)
            if source
            else partitions.build(get_task(task_id), seed)
        )
        datafile.save(data, output)


def _meta(data: Path) -> dict:
    loaded = datafile.load(data)
    return {**loaded.meta, "num_clients": len(loaded.clients)}


def run_baseline(task_id: str, strategy: str, settings: BenchSettings, datas: list[Path],
                 outputs: list[Path]) -> None:  # fmt: skip
    """A baseline's run on the task's data of each seed (``settings.seeds``,
    in order); writes each run's record."""
    task = get_task(task_id)
    for seed, data, output in zip(settings.seeds, datas, outputs, strict=True):
        config = benchmark.run_config(task, _meta(data), settings, seed, strategy)
        write_json(output, benchmark.run(codebase.baseline(strategy), data.read_bytes(),
                                         config, task))  # fmt: skip


def plan(query: str, policy: Policy, agents: dict, calls: Path, output: Path,
         approval_file: Path | None = None) -> dict:  # fmt: skip
    """Phase 1; writes plan.json (status approved or rejected, the plan, the
    path of nodes taken, the feedback given)."""
    approver = make_approver(agents["approval"], approval_file)
    llm = AgentLLM(policy, calls, max_new_tokens=agents["max_new_tokens"])
    payload = plan_task(query, llm, approver, agents["plan_rounds"]).__dict__
    write_json(output, payload)
    return payload


def code(
    plan_file: Path, policy: Policy, agents: dict, calls: Path, output: Path
) -> None:
    """Phase 2; writes the codebase (``output``/*.py), blueprint.json and
    notes.json. A rejected plan leaves an empty codebase (the refine phase
    then records the task as not planned)."""
    planned = json.loads(Path(plan_file).read_text())
    modules, blueprint, notes = {}, {}, ["the plan was not approved: nothing to code"]
    if planned["status"] == "approved":
        llm = AgentLLM(policy, calls, max_new_tokens=agents["max_new_tokens"])
        modules, blueprint, notes = write_codebase(planned["plan"], llm)
    scratch = output.with_name(f".{output.name}.partial")
    codebase.save(modules, scratch)
    write_json(scratch / "blueprint.json", blueprint)
    write_json(scratch / "notes.json", notes)
    _replace_folder(scratch, output)


def refine_task(task_id: str | None, plan_file: Path, code_dir: Path, data: Path,
                policy: Policy, agents: dict, settings: BenchSettings, calls: Path,
                folder: Path) -> dict:  # fmt: skip
    """Phase 3 in ``folder`` (attempt=<n>/ folders, status.json), then the
    attempts as rows of ``attempts.parquet`` (the ``helmsman_attempts`` view).
    ``task_id`` None: a free query, judged on global accuracy."""
    planned = json.loads(Path(plan_file).read_text())
    if planned["status"] != "approved":
        status = {"status": "FAIL_PLAN", "repairs": 0, "budget": agents["budget"],
                  "accuracy": None, "final": {"reason": planned["reason"]}}  # fmt: skip
        write_json(folder / "status.json", status)
    else:
        task = get_task(task_id) if task_id else None
        config = benchmark.run_config(task, _meta(data), settings, 0, "generated")
        config["rounds"] = agents["sandbox_rounds"]
        llm = AgentLLM(policy, calls, max_new_tokens=agents["max_new_tokens"])
        judge = planned["plan"] if agents.get("judge") else None
        status = refine(folder, codebase.load(code_dir), data.read_bytes(), config, llm,
                        budget=agents["budget"], judge=judge)  # fmt: skip
    write_attempts(task_id or "query", folder, folder / ATTEMPTS_FILE)
    return status


def run_query(query: str, data: Path, folder: Path, policy: Policy, agents: dict,
              approval_file: Path | None = None) -> dict:  # fmt: skip
    """The whole loop on a free-form research query, run on ``data`` (a
    task's npz): plan, code and refine in ``folder``; each phase already done
    there is kept (delete its file to redo it). Returns ``status.json``."""
    folder = Path(folder)
    calls = folder / "calls.jsonl"
    if not (folder / "plan.json").exists():
        plan(query, policy, agents, calls, folder / "plan.json", approval_file)
    if not (folder / "code").exists():
        code(folder / "plan.json", policy, agents, calls, folder / "code")
    return refine_task(None, folder / "plan.json", folder / "code", Path(data), policy,
                       agents, BenchSettings(), calls, folder)  # fmt: skip


def final_run(task_id: str, folder: Path, status_file: Path, settings: BenchSettings,
              datas: list[Path], outputs: list[Path]) -> None:  # fmt: skip
    """The agents' final codebase on the benchmark's settings ("Ours"), for
    each seed; a task the agents did not finish gets records without a metric."""
    status = json.loads(Path(status_file).read_text())
    task = get_task(task_id)
    for seed, data, output in zip(settings.seeds, datas, outputs, strict=True):
        if status["status"] != "SUCCESS":
            record = {"task": task_id, "strategy": "generated", "seed": seed,
                      "verdict": status["status"], "problems": [], "rounds": []}  # fmt: skip
        else:
            last = attempts(folder)[-1]["attempt"]
            modules = codebase.load(folder / f"attempt={last}" / "code")
            config = benchmark.run_config(
                task, _meta(data), settings, seed, "generated"
            )
            record = benchmark.run(modules, data.read_bytes(), config, task)
        write_json(output, record)


def write_attempts(task_id: str, folder: Path, output: Path) -> None:
    rows = [{"task": task_id, "attempt": r["attempt"], "verdict": r["diagnosis"]["verdict"],
             "level": r["diagnosis"]["level"], "problems": list(r["diagnosis"]["problems"]),
             "repaired": r["repaired"], "seconds": float(r["seconds"]),
             "accuracy": r["accuracy"]} for r in attempts(folder)]  # fmt: skip
    schema = pa.schema([("task", pa.string()), ("attempt", pa.int64()), ("verdict", pa.string()),
                        ("level", pa.int64()), ("problems", pa.list_(pa.string())),
                        ("repaired", pa.bool_()), ("seconds", pa.float64()),
                        ("accuracy", pa.float64())])  # fmt: skip
    with atomic_path(output) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)


def _replace_folder(scratch: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    scratch.rename(target)

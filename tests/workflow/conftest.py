"""Run the real workflow on the tiny model in temporary working directories."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "configs" / "tiny.yaml"


def snakemake(
    workdir: Path,
    *args: str,
    config: Path | tuple[Path, ...] = TINY,
    check: bool = True,
    **kwargs,
):
    """Run snakemake on the repository's Snakefile inside ``workdir`` (with
    several config files, each laid over the ones before it)."""
    configs = [str(c) for c in (config if isinstance(config, tuple) else (config,))]
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
        "--directory", str(workdir), "--configfile", *configs, "--cores", "2",
        "--set-threads", "explore=1", "train_client=1", "train_pooled=1", "evaluate=1",
        "rl_span=1", "rl_client_span=1", "tts_turns=1", "tts_passk=1",
        *args,
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if check and run.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
        )
    return run


def dry_run_jobs(text: str) -> list[dict[str, list[str] | str]]:
    """Jobs of a ``snakemake -n`` printout: rule name, input and output files."""
    jobs: list[dict] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("rule ", "localrule ")) and stripped.endswith(":"):
            jobs.append(
                {"rule": stripped.split()[1].rstrip(":"), "input": [], "output": []}
            )
        elif jobs and stripped.startswith(("input:", "output:")):
            key, _, files = stripped.partition(":")
            jobs[-1][key] = [f.strip() for f in files.split(",") if f.strip()]
    return jobs


def planned_jobs(
    workdir: Path, *args: str, config: Path = TINY
) -> list[tuple[str, str]]:
    """(rule, first output) of every job a dry run would execute."""
    out = snakemake(workdir, "-n", *args, config=config).stdout
    return [
        (job["rule"], job["output"][0]) for job in dry_run_jobs(out) if job["output"]
    ]


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """One complete run of the tiny DAG (all methods, 2 envs, 2 rounds)."""
    workdir = tmp_path_factory.mktemp("tiny-run")
    snakemake(workdir)
    return workdir


@pytest.fixture
def tiny_copy(tiny_run, tmp_path) -> Path:
    """A private copy of the finished run (results, metadata and all)."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy, symlinks=True)
    return copy


def run_log(workdir: Path) -> str:
    """The text of the last Snakemake run's log in ``workdir``."""
    return sorted((workdir / ".snakemake/log").glob("*.snakemake.log"))[-1].read_text()


@dataclass
class Queue:
    """A run's scheduling, replayed from its log (``queue_jumps``)."""

    # batches where a leaf started while a ready chain job waited
    jumps: list[str]
    # batches where a chain and a leaf job were both ready and one of them waited
    contested: int


def _log_events(log: str) -> tuple[dict, list]:
    """Jobs (rule, input, output by id) and the events of a log of job
    blocks: ("select",), ("start", id), ("finish", id), in order."""
    jobs, events, current = {}, [], None
    for line in log.splitlines():
        text = line.strip()
        if text == "Select jobs to execute...":
            events.append(("select",))
        elif text.startswith(("rule ", "localrule ")) and text.endswith(":"):
            current = {"rule": text.split()[1].rstrip(":"), "input": [], "output": []}
        elif current is not None and text.startswith(("input:", "output:")):
            key, _, files = text.partition(":")
            current[key] = [f.strip() for f in files.split(",") if f.strip()]
        elif current is not None and text.startswith("jobid:"):
            jobs[text.split()[1]] = current
            events.append(("start", text.split()[1]))
            current = None
        elif text.startswith("Finished jobid:"):
            events.append(("finish", text.split()[2]))
    return jobs, events


def queue_jumps(log: str, chain_rules: set[str], leaf_rules: set[str]) -> Queue:
    """Replay the scheduler's batches ("Select jobs to execute...") of a run's
    log of job blocks (EVOFLOW_JOB_BLOCKS=1): at each batch, the chain and leaf
    jobs that were ready (every input made by a finished job, or not made by
    the run) against the ones the batch started. Raises on a log it cannot
    replay (no job blocks, a job started but never finished)."""
    jobs, events = _log_events(log)
    started = {e[1] for e in events if e[0] == "start"}
    finished = {e[1] for e in events if e[0] == "finish"}
    if not jobs or started != finished:
        raise ValueError(
            f"log not replayable: {len(jobs)} job blocks, "
            f"{len(started - finished)} started and never finished"
        )
    maker = {out: job for job, spec in jobs.items() for out in spec["output"]}
    done, begun, batches = set(), set(), []
    for event in events:
        if event[0] == "select":
            ready = {j for j, spec in jobs.items() if j not in begun
                     and all(maker.get(f) in done or f not in maker for f in spec["input"])}  # fmt: skip
            batches.append((ready, []))
        elif event[0] == "start":
            if not batches:
                raise ValueError(
                    "log not replayable: a job started before any selection"
                )
            begun.add(event[1])
            batches[-1][1].append(event[1])
        else:
            done.add(event[1])
    queue = Queue([], 0)
    for ready, batch in batches:
        chain = {j for j in ready if jobs[j]["rule"] in chain_rules}
        leaves = {j for j in ready if jobs[j]["rule"] in leaf_rules}
        waiting = (chain | leaves) - set(batch)
        queue.contested += bool(batch and chain and leaves and waiting)
        jumped = [jobs[j]["rule"] for j in batch if j in leaves]
        if jumped and chain - set(batch):
            queue.jumps.append(
                f"{jumped} started while {[jobs[j]['rule'] for j in chain - set(batch)]} waited"
            )
    return queue

"""Run the real workflow on the tiny model in temporary working directories."""

from __future__ import annotations

import shutil
import subprocess
import sys
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

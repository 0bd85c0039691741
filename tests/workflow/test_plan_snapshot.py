"""Regression snapshot: the jobs each shipped Fed-SE config plans.

``snapshots/plans.json`` was written by the workflow *before* the method wiring
moved out of ``rules/common.smk`` into ``evoflow.methods`` — it is our own
earlier output, not an independent truth, and guards only that a refactor
plans exactly the same jobs (rule, every input, every output) as before.
Regenerate it deliberately, after a change that is meant to alter the DAG:

    python -m tests.workflow.test_plan_snapshot
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import pytest

from tests.workflow.conftest import ROOT, TINY, dry_run_jobs, snakemake

SNAPSHOT = Path(__file__).parent / "snapshots" / "plans.json"
CONFIGS = {
    "tiny": TINY,
    "embedded": ROOT / "config" / "config.yaml",
    "ablations": (ROOT / "config" / "config.yaml", ROOT / "config" / "ablations.yaml"),
    "paper-llama": ROOT / "config" / "paper" / "fedse_llama-2-7b.yaml",
}
DIGEST_ONLY = {"paper-llama"}  # 1,982 jobs: stored as count and sha256 only


def plan(config: Path | tuple[Path, ...]) -> list[dict]:
    """Every job of a forced dry run: rule, sorted inputs, sorted outputs."""
    with tempfile.TemporaryDirectory() as workdir:
        out = snakemake(Path(workdir), "-n", "--forceall", config=config).stdout
    jobs = [
        {"rule": j["rule"], "input": sorted(j["input"]), "output": sorted(j["output"])}
        for j in dry_run_jobs(out)
    ]
    return sorted(jobs, key=lambda j: (j["rule"], j["output"], j["input"]))


def recorded(name: str, jobs: list[dict]) -> list | dict:
    """What the snapshot keeps of a plan: the jobs, or their count and digest."""
    if name not in DIGEST_ONLY:
        return jobs
    text = json.dumps(jobs, sort_keys=True)
    return {"jobs": len(jobs), "sha256": hashlib.sha256(text.encode()).hexdigest()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_plans_the_same_jobs_as_before(name):
    expected = json.loads(SNAPSHOT.read_text())[name]
    actual = recorded(name, plan(CONFIGS[name]))
    assert actual == expected


if __name__ == "__main__":
    import os

    # the dry runs print job blocks only with this set (tests/conftest.py sets
    # it for pytest): without it every plan would come out empty
    os.environ["EVOFLOW_JOB_BLOCKS"] = "1"
    SNAPSHOT.parent.mkdir(exist_ok=True)
    plans = {name: recorded(name, plan(path)) for name, path in sorted(CONFIGS.items())}
    lines = ",\n".join(
        f"{json.dumps(name)}: " + (
            "[\n" + ",\n".join(json.dumps(j) for j in jobs) + "\n]"
            if isinstance(jobs, list) else json.dumps(jobs)
        )
        for name, jobs in plans.items()
    )  # fmt: skip
    SNAPSHOT.write_text("{\n" + lines + "\n}\n")
    print({name: len(jobs) for name, jobs in plans.items()})

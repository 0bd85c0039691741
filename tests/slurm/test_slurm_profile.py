"""`snakemake --profile slurm` as typed in the README: the real profile, dry run.

No cluster is needed: a dry run never calls sbatch, so this runs everywhere.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import defaultdict

import pytest
import yaml

from tests.slurm.harness import ROOT, SNAKEMAKE

pytestmark = pytest.mark.slow

GPU_RULES = {"explore", "train_client", "train_pooled", "evaluate"}
CPU_RULES = {"expert_demos", "aggregate"}
_JOB = re.compile(r"^(local)?rule (\w+):$")


def _dry_run_resources() -> dict[str, list[dict[str, str]]]:
    """Rule -> the resources line of each of its jobs in the dry run."""
    out = subprocess.run(
        [
            str(SNAKEMAKE),
            "--profile",
            "slurm",
            "-n",
            "--configfile",
            "config/paper/fedse_qwen2.5-7b.yaml",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "PATH": f"{SNAKEMAKE.parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "Using profile slurm" in out.stdout + out.stderr
    jobs: dict[str, list[dict[str, str]]] = defaultdict(list)
    rule = None
    for line in (out.stdout + out.stderr).splitlines():
        if found := _JOB.match(line):
            rule = found.group(2)
        elif rule and line.strip().startswith("resources:"):
            pairs = line.split(":", 1)[1].split(",")
            jobs[rule].append(dict(p.strip().split("=", 1) for p in pairs))
            rule = None
    return jobs


def test_profile_name_resolves_to_the_committed_profile() -> None:
    assert (ROOT / "slurm").is_symlink()
    assert (ROOT / "slurm").resolve() == ROOT / "workflow" / "profiles" / "slurm"
    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert set(profile["set-resources"]) >= GPU_RULES | CPU_RULES


def test_paper_dry_run_asks_one_gpu_for_model_rules() -> None:
    # Execute
    jobs = _dry_run_resources()

    # Assert: every job of every GPU rule asks one GPU; CPU rules ask none
    assert GPU_RULES <= set(jobs)
    for rule in GPU_RULES:
        for resources in jobs[rule]:
            assert resources.get("gpu") == "1", (rule, resources)
            assert int(resources["cpus_per_gpu"]) >= 1
            assert resources["slurm_partition"]
    for rule in CPU_RULES:
        assert jobs[rule], rule
        for resources in jobs[rule]:
            assert "gpu" not in resources, (rule, resources)
    # The paper sweep: 20 rounds of Fed-SE exploration, each round's 5 clients
    # in one job.
    assert len(jobs["explore"]) == 20

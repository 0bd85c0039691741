"""The method DAG through sbatch on a real Slurm cluster equals a local run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.slurm.harness import (
    TEST_PROFILE,
    Cluster,
    artifacts,
    snakemake,
    snakemake_args,
)

pytestmark = pytest.mark.slow

# Non-local jobs of one Fed-SE round on two envs; the manifests, buffers,
# resolved config and report are local rules and must not reach Slurm.
EXPECTED_REMOTE = Counter(
    expert_demos=2, explore=1, train_client=2, aggregate=1, evaluate=1
)


def test_dag_runs_through_slurm_like_local(
    cluster: Cluster, reference: Path, small_config: Path, tmp_path: Path
) -> None:
    # Execute
    args = snakemake_args(tmp_path, small_config, TEST_PROFILE)
    result = snakemake(args, cluster.env, tmp_path / "snakemake.out").check()

    # Assert: every non-local job was one sbatch job that Slurm ran to completion
    assert result.remote_rules == EXPECTED_REMOTE
    slurm_ids = result.slurm_jobs
    assert len(slurm_ids) == sum(EXPECTED_REMOTE.values())
    assert len(set(slurm_ids.values())) == len(slurm_ids)
    # Slurm wrote each job's log (sbatch --output) with the job step's snakemake
    # running that rule inside it.
    for slurm_id in slurm_ids.values():
        (log,) = (tmp_path / ".snakemake" / "slurm_logs").rglob(f"{slurm_id}.log")
        assert f"rule {log.parts[-3].removeprefix('rule_')}:" in log.read_text()
    # squeue keeps finished jobs for MinJobAge (300 s): all of them ended well.
    rows = cluster.squeue(f"--name={result.run_id}", "--states=all")
    listed = {job: state for job, _, state in rows}
    assert listed, "squeue lists none of the run's jobs"
    assert set(listed) <= set(slurm_ids.values())
    assert set(listed.values()) == {"COMPLETED"}

    # Assert: same episodes, rewards, metrics and adapters as the local run
    got, want = artifacts(tmp_path), artifacts(reference)
    assert sorted(got) == sorted(want)
    assert len([k for k in want if k.endswith("metrics.json")]) == 2
    for name in want:
        assert got[name] == want[name], f"{name} differs from the local run"

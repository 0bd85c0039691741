"""Resuming a Slurm run after each way it can be cut short.

Each case builds one small target: an expert_demos job on Slurm and the local
manifest that reads its parquet file (and records that file's sha256), so a
half-written parquet being read would show up as a wrong hash or wrong rows.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.slurm.harness import (
    RECOVER_SH,
    SNAKEMAKE,
    TEST_PROFILE,
    Cluster,
    artifacts,
    demos_target,
    finish,
    results,
    run,
    snakemake,
    snakemake_args,
    start,
    wait_until_running,
)

pytestmark = pytest.mark.slow

DEMOS = "expert/env=maze/demos.parquet"


def _assert_resumed(workdir: Path, reference: Path) -> None:
    """The target is complete, equal to the local run, and read whole."""
    demos = results(workdir) / DEMOS
    assert artifacts(workdir)[DEMOS] == artifacts(reference)[DEMOS]
    manifest = json.loads((demos.parent / "manifest.json").read_text())
    (shard,) = manifest["shards"]
    assert shard["sha256"] == hashlib.sha256(demos.read_bytes()).hexdigest()
    assert not list((workdir / ".snakemake" / "locks").glob("*"))


def _start_run(
    cluster: Cluster, workdir: Path, config: Path, name: str
) -> tuple[list[str], subprocess.Popen, Path, str, str]:
    """Start snakemake on the small target; return once its Slurm job runs."""
    args = snakemake_args(workdir, config, TEST_PROFILE, demos_target())
    log = workdir / f"{name}.out"
    proc = start([str(SNAKEMAKE), *args], cluster.env, log)
    run_id, job_id = wait_until_running(cluster, proc, log)
    return args, proc, log, run_id, job_id


def test_scancel_fails_the_run_and_a_rerun_completes(
    cluster: Cluster, reference: Path, small_config: Path, tmp_path: Path
) -> None:
    # Prepare: the Slurm job is running
    args, proc, log, run_id, job_id = _start_run(
        cluster, tmp_path, small_config, "first"
    )

    # Execute: the user or an admin cancels the job (scancel)
    cluster.scancel(job_id)
    first = finish(proc, log)

    # Assert: the run failed on that job and removed what it had written
    assert first.returncode != 0
    assert f"SLURM-job '{job_id}' failed" in first.log
    assert "CANCELLED" in first.log
    assert not (results(tmp_path) / DEMOS).exists()

    # Execute: the same command again
    second = snakemake(args, cluster.env, tmp_path / "second.out").check()

    # Assert: the job ran again as a new Slurm job, and the outputs are whole
    assert list(second.slurm_jobs.values()) != [job_id]
    assert len(second.slurm_jobs) == 1
    _assert_resumed(tmp_path, reference)


# SIGINT (Ctrl-C) cancels the running Slurm job; SIGTERM (`kill`, or Slurm ending
# a job that runs snakemake) lets it finish and starts nothing new. Either way
# the run stops without a live job or a lock, and the same command resumes it.
@pytest.mark.parametrize(
    ("signum", "job_state", "rerun_submits"),
    [(signal.SIGINT, "CANCELLED", 1), (signal.SIGTERM, "COMPLETED", 0)],
    ids=["SIGINT", "SIGTERM"],
)
def test_interrupted_snakemake_leaves_no_job_and_a_rerun_completes(
    signum: signal.Signals,
    job_state: str,
    rerun_submits: int,
    cluster: Cluster,
    reference: Path,
    small_config: Path,
    tmp_path: Path,
) -> None:
    # Prepare: the Slurm job is running
    args, proc, log, run_id, job_id = _start_run(
        cluster, tmp_path, small_config, "first"
    )

    # Execute
    proc.send_signal(signum)
    first = finish(proc, log)

    # Assert: snakemake stopped, leaving neither a live job nor its lock
    assert first.returncode != 0
    assert cluster.live_jobs_after(run_id) == []
    assert cluster.state(job_id) == job_state
    assert not list((tmp_path / ".snakemake" / "locks").glob("*"))
    assert not (results(tmp_path) / "expert/env=maze/manifest.json").exists()

    # Execute: a plain rerun
    second = snakemake(args, cluster.env, tmp_path / "second.out").check()

    # Assert: only what was not finished ran again
    assert len(second.slurm_jobs) == rerun_submits
    _assert_resumed(tmp_path, reference)


def test_recover_after_sigkill(
    cluster: Cluster, reference: Path, small_config: Path, tmp_path: Path
) -> None:
    # Prepare: the Slurm job is running when snakemake is killed outright
    args, proc, log, run_id, job_id = _start_run(
        cluster, tmp_path, small_config, "first"
    )
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    # Assert: an orphaned job and a stale lock are left behind
    assert cluster.live_jobs(run_id) == [job_id]
    assert list((tmp_path / ".snakemake" / "locks").glob("*"))
    # The node dies mid-write: a truncated parquet where the job writes.
    demos = results(tmp_path) / DEMOS
    demos.parent.mkdir(parents=True, exist_ok=True)
    demos.write_bytes(b"PAR1 half written")

    # Execute: the one documented recovery command
    recovered = run(["bash", str(RECOVER_SH), *args], cluster.env, tmp_path / "r.out")

    # Assert: orphan cancelled, lock released, the job redone, outputs whole
    recovered.check()
    assert f"cancelling 1 orphaned Slurm job(s): {job_id}" in recovered.log
    assert cluster.state(job_id) == "CANCELLED"
    assert len(recovered.slurm_jobs) == 1
    assert job_id not in recovered.slurm_jobs.values()
    _assert_resumed(tmp_path, reference)

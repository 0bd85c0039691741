"""Run the workflow on the test Slurm cluster and read back what it did.

The cluster is real (tests/slurm/cluster.sh); these helpers only start snakemake,
ask squeue about jobs and load the artifacts two runs should agree on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
CLUSTER_SH = HERE / "cluster.sh"
TEST_PROFILE = HERE / "profile"
LOCAL_PROFILE = ROOT / "workflow" / "profiles" / "local"
RECOVER_SH = ROOT / "scripts" / "slurm" / "recover.sh"
EXPERIMENT = "slurm-tiny"
# Every snakemake call is bounded, so a hang fails the test instead of the CI job.
RUN_TIMEOUT_S = 420

_SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+)")
_RUN_ID = re.compile(r"SLURM run ID: (\S+)")
# Snakemake prints "rule <name>:" for a job it hands to the executor and
# "localrule <name>:" for one it runs itself.
_REMOTE_RULE = re.compile(r"^rule (\w+):$", re.MULTILINE)


def write_small_config(path: Path) -> Path:
    """tests/configs/tiny.yaml cut to one round of Fed-SE on its two envs.

    Fed-SE alone reaches every rule that runs on Slurm (expert_demos, explore,
    train_client, aggregate, evaluate) and every local one.
    """
    config = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
    config["experiment"] = EXPERIMENT
    config["fed"] = {"rounds": 1}
    config["methods"] = {"fedse": {}}
    if len(config["envs"]) != 2:
        raise ValueError(f"tiny.yaml should have 2 envs, has {list(config['envs'])}")
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def results(workdir: Path) -> Path:
    return workdir / "results" / EXPERIMENT


def demos_target(env: str = "maze") -> str:
    """A small target: one Slurm job (expert_demos) and one local reader of it."""
    return f"results/{EXPERIMENT}/expert/env={env}/manifest.json"


@dataclass
class Cluster:
    """The running test cluster: its folder and the environment that reaches it."""

    dir: Path
    env: dict[str, str]

    def squeue(self, *args: str) -> list[tuple[str, str, str]]:
        """(job id, job name, state) of the jobs squeue lists for ``args``."""
        out = subprocess.run(
            ["squeue", "--noheader", "--format=%i|%j|%T", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return [tuple(line.split("|")) for line in out.splitlines() if line.strip()]

    def scancel(self, job_id: str) -> None:
        subprocess.run(["scancel", job_id], env=self.env, timeout=30, check=True)

    def live_jobs(self, run_id: str) -> list[str]:
        """Ids of the run's jobs that are still pending or running."""
        states = "PENDING,RUNNING,COMPLETING,SUSPENDED"
        return [j for j, _, _ in self.squeue(f"--name={run_id}", f"--states={states}")]

    def live_jobs_after(self, run_id: str, grace_s: float = 30.0) -> list[str]:
        """The run's live jobs once ``grace_s`` has passed or none is left.

        scancel returns before slurmd has killed the job, which stays
        COMPLETING for a moment; a job nobody cancelled is still live after it.
        """
        deadline = time.monotonic() + grace_s
        while (live := self.live_jobs(run_id)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return live

    def state(self, job_id: str) -> str:
        """A job's state; finished jobs stay listed for MinJobAge (300 s)."""
        rows = self.squeue(f"--jobs={job_id}", "--states=all")
        return rows[0][2] if rows else "UNKNOWN"


@dataclass
class Run:
    """What one snakemake invocation printed."""

    returncode: int
    log: str

    @property
    def run_id(self) -> str | None:
        found = _RUN_ID.search(self.log)
        return found.group(1) if found else None

    @property
    def slurm_jobs(self) -> dict[str, str]:
        """Snakemake job id -> Slurm job id, for every sbatch submission."""
        return dict(_SUBMITTED.findall(self.log))

    @property
    def remote_rules(self) -> Counter[str]:
        """How many jobs of each rule snakemake handed to the executor."""
        return Counter(_REMOTE_RULE.findall(self.log))

    def check(self) -> Run:
        if self.returncode != 0:
            raise AssertionError(
                f"snakemake exited {self.returncode}:\n{self.log[-6000:]}"
            )
        return self


def snakemake_args(
    workdir: Path, config: Path, profile: Path, *extra: str
) -> list[str]:
    return [
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config),
        "--profile",
        str(profile),
        *extra,
    ]


def _default_sigint() -> None:
    # A process started from a non-interactive shell with `&` inherits SIGINT as
    # ignored, and Python then never raises KeyboardInterrupt: undo that so the
    # SIGINT test measures snakemake, not how CI happened to launch pytest.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(cmd: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """Start ``cmd`` in its own session, stdout and stderr to ``log_path``."""
    with open(log_path, "w") as log:
        return subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_default_sigint,
        )


def finish(proc: subprocess.Popen, log_path: Path) -> Run:
    try:
        proc.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(
            f"{proc.args} ran over {RUN_TIMEOUT_S} s:\n{log_path.read_text()[-6000:]}"
        ) from None
    return Run(proc.returncode, log_path.read_text())


def run(cmd: list[str], env: dict[str, str], log_path: Path) -> Run:
    return finish(start(cmd, env, log_path), log_path)


def snakemake(args: list[str], env: dict[str, str], log_path: Path) -> Run:
    return run([str(SNAKEMAKE), *args], env, log_path)


def wait_until_running(
    cluster: Cluster, proc: subprocess.Popen, log_path: Path, timeout: float = 120
) -> tuple[str, str]:
    """Wait until the run has a Slurm job in state RUNNING: (run id, job id)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"snakemake ended ({proc.returncode}) before any job ran:\n"
                f"{log_path.read_text()[-6000:]}"
            )
        so_far = Run(0, log_path.read_text())
        if so_far.run_id:
            running = cluster.squeue(f"--name={so_far.run_id}", "--states=RUNNING")
            # Also wait for snakemake to log the submission: it then tracks the job.
            for job_id, _, _ in running:
                if job_id in so_far.slurm_jobs.values():
                    return so_far.run_id, job_id
        time.sleep(0.3)
    raise AssertionError(f"no Slurm job RUNNING after {timeout} s")


def artifacts(workdir: Path) -> dict[str, object]:
    """Every metrics.json and every parquet's rows, without wall-clock fields.

    Two runs of one config must agree on all of it: messages, rewards, success
    and the adapter hashes recorded in the metrics.
    """
    found: dict[str, object] = {}
    base = results(workdir)
    for path in sorted(base.rglob("metrics.json")):
        found[str(path.relative_to(base))] = json.loads(path.read_text())
    for path in sorted(base.rglob("*.parquet")):
        table = pq.read_table(path)
        if "created_at" in table.column_names:
            table = table.drop_columns(["created_at"])
        found[str(path.relative_to(base))] = table.to_pylist()
    return found


def slurm_env(cluster_dir: Path) -> dict[str, str]:
    """This process's environment plus the way to the test cluster."""
    env = dict(os.environ)
    env["SLURM_CONF"] = str(cluster_dir / "slurm.conf")
    # cluster.sh's srun shim first, then this virtualenv (the jobs inherit PATH).
    env["PATH"] = os.pathsep.join(
        [str(cluster_dir / "bin"), str(SNAKEMAKE.parent), env.get("PATH", "")]
    )
    return env

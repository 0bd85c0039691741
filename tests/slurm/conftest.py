"""A real one-node Slurm cluster for the session, and a local reference run.

The cluster needs root (its daemons run as root, and apt-get installs slurm-wlm
and munge when they are missing). Where that is impossible the Slurm tests are
skipped with the reason — except on CI (a truthy ``CI`` variable) or with
EVOFLOW_REQUIRE_SLURM=1, where such a skip is a failure. On a root machine with
apt they always run: a failed set-up is an error, not a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.helpers import service_required
from tests.slurm.harness import (
    CLUSTER_SH,
    LOCAL_PROFILE,
    Cluster,
    slurm_env,
    snakemake,
    snakemake_args,
    write_small_config,
)

_SLURM_TOOLS = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "munged")


def _slurm_installed() -> bool:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return all(shutil.which(tool, path=path) for tool in _SLURM_TOOLS)


def _skip_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the test Slurm cluster needs Linux"
    if os.geteuid() != 0:
        installed = "installed" if _slurm_installed() else "not installed"
        return (
            "the test Slurm cluster needs root: munged, slurmctld and slurmd run as "
            f"root, and apt-get installs slurm-wlm/munge when missing ({installed})"
        )
    if not _slurm_installed() and shutil.which("apt-get") is None:
        return (
            "slurm-wlm/munge are not installed and there is no apt-get to install them"
        )
    return None


def cluster_unavailable(reason: str) -> NoReturn:
    """Skip the Slurm tests, or fail them where they must run (CI)."""
    if service_required("EVOFLOW_REQUIRE_SLURM"):
        pytest.fail(
            f"the Slurm tests must run here (CI or EVOFLOW_REQUIRE_SLURM=1) but {reason}"
        )
    pytest.skip(reason)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reason = _skip_reason()
    if reason:
        cluster_unavailable(reason)
    folder = tmp_path_factory.mktemp("slurm-cluster")
    started = subprocess.run(
        ["bash", str(CLUSTER_SH), "start", str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if started.returncode != 0:
        pytest.fail(f"tests/slurm/cluster.sh start failed:\n{started.stderr}")
    yield Cluster(dir=folder, env=slurm_env(folder))
    subprocess.run(
        ["bash", str(CLUSTER_SH), "stop", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="session")
def small_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_small_config(tmp_path_factory.mktemp("config") / "small.yaml")


@pytest.fixture(scope="session")
def reference(
    cluster: Cluster, small_config: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The small config run with the local profile: what Slurm runs must equal.

    It asks for ``cluster`` only so that it is skipped along with the Slurm tests.
    """
    workdir = tmp_path_factory.mktemp("local")
    args = snakemake_args(workdir, small_config, LOCAL_PROFILE)
    snakemake(args, dict(os.environ), workdir / "snakemake.out").check()
    return workdir

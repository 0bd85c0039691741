"""Shared fixtures, and the order and grouping of tests under pytest-xdist
(``make test`` runs ``pytest -n 2``; see ``tests/scheduling.py``)."""

from __future__ import annotations

import os

import pytest

from evoflow.store import ShardMeta
from tests.scheduling import make_scheduler
from tests.servers import ServerProcess

# Snakemake runs of the tests print each job's block (rule, files, wildcards)
# instead of its one-line message: the dry-run readers parse those blocks
# (rules/common.smk, job_message). Tests of the messages unset it.
os.environ["EVOFLOW_JOB_BLOCKS"] = "1"


@pytest.fixture
def meta() -> ShardMeta:
    return ShardMeta(
        experiment="exp", config_hash="c" * 64, model_id="tiny-llama", seed=7
    )


@pytest.fixture
def serve():
    started: list[ServerProcess] = []

    def start(env: str, *extra: str) -> ServerProcess:
        server = ServerProcess(env, *extra).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # One core per worker: two workers with two threads each oversubscribe.
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first (stable otherwise), so that long units start early."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "load":
        return make_scheduler(config, log)
    return None

"""Shared fixtures."""

from __future__ import annotations

import pytest

from evoflow.store import ShardMeta
from tests.servers import ServerProcess


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

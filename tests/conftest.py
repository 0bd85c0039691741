"""Shared fixtures."""

from __future__ import annotations

import pytest

from evoflow.store import ShardMeta


@pytest.fixture
def meta() -> ShardMeta:
    return ShardMeta(
        experiment="exp", config_hash="c" * 64, model_id="tiny-llama", seed=7
    )

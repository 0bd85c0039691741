"""A round's clients explore in one batch, each exactly as it would alone."""

from __future__ import annotations

from pathlib import Path

from evoflow.config import config_hash, load_config
from evoflow.methods.jobs import runtime_settings
from evoflow.rollout.explore import explore, explore_envs
from evoflow.store import read_shard

TINY = Path(__file__).parents[1] / "configs" / "tiny.yaml"
FIELDS = ["explore", "max_turns", "remote", "strata"]


def test_clients_explored_together_play_what_they_play_alone(tmp_path):
    # Prepare: the tiny config's two clients, at temperature 1 (sampled)
    config = load_config(TINY)
    envs = list(config["envs"])
    settings = runtime_settings(config, envs, FIELDS)
    together = {env: tmp_path / "together" / f"{env}.parquet" for env in envs}

    # Execute
    explore_envs(settings, config_hash(settings), "fedse", 1, None, together)
    alone = {}
    for env in envs:
        one = runtime_settings(config, [env], FIELDS)
        alone[env] = tmp_path / "alone" / f"{env}.parquet"
        explore(one, config_hash(one), env, "fedse", 1, None, alone[env])

    # Assert: each shard holds its own env's episodes, the same tasks and
    # replies as that client exploring alone
    for env in envs:
        a, b = read_shard(together[env]), read_shard(alone[env])
        assert set(a.column("env").to_pylist()) == {env}
        assert a.num_rows == config["envs"][env]["explore"]
        assert a.column("task_id").to_pylist() == b.column("task_id").to_pylist()
        assert _contents(a) == _contents(b)


def _contents(shard) -> list[list[str]]:
    return [[m["content"] for m in e] for e in shard.column("messages").to_pylist()]

"""Manifest selections, including the reward threshold."""

from __future__ import annotations

import pytest

from evoflow.store import ShardMeta, write_shard
from evoflow.store.manifest import build_buffer, load_episodes, write_shards_manifest
from evoflow.store.selection import normalise
from tests.helpers import make_episode

# episode i: reward, success
EPISODES = [(0.0, False), (0.5, False), (1.0, True), (1.0, False), (2.5, True)]


@pytest.fixture
def shards(tmp_path):
    explored = [
        make_episode(i, episode_id=f"x{i}", reward=r, success=s)
        for i, (r, s) in enumerate(EPISODES)
    ]
    write_shard(tmp_path / "x.parquet", explored, ShardMeta("e", "c" * 64, "m", 0))
    demos = [make_episode(9, episode_id="demo")]
    write_shard(tmp_path / "d.parquet", demos, ShardMeta("e", "c" * 64, "m", 0))
    write_shards_manifest(tmp_path / "seed.json", [tmp_path / "d.parquet"])
    return tmp_path


@pytest.mark.parametrize(
    ("select", "kept"),
    [
        ("all", ["x0", "x1", "x2", "x3", "x4"]),
        ("success", ["x2", "x4"]),
        ("reward>=1", ["x2", "x3", "x4"]),
        ("reward >= 0.5", ["x1", "x2", "x3", "x4"]),
        ("reward>=3", []),
    ],
)
def test_buffer_keeps_what_the_selection_names(shards, select, kept):
    out = shards / "buffer.json"
    manifest = build_buffer(out, shards / "seed.json", shards / "x.parquet", select)

    ids = load_episodes(out, ["episode_id"])["episode_id"].to_pylist()
    assert ids == ["demo", *kept]
    assert manifest.info["added_episodes"] == len(kept)
    assert manifest.info["explored_successes"] == 2


def test_spellings_are_normalised_or_refused():
    assert normalise("reward >= 1.0") == "reward>=1"
    assert normalise("reward>=-0.25") == "reward>=-0.25"
    for bad in ("reward>1", "reward>=x", "successes", "reward>="):
        with pytest.raises(ValueError, match="is not one of"):
            normalise(bad)

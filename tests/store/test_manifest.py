from __future__ import annotations

import json

import pytest

from evoflow.errors import StoreError
from evoflow.store import (
    Manifest,
    load_episodes,
    read_manifest,
    shard_ref,
    write_manifest,
    write_shard,
)
from tests.helpers import make_episode


@pytest.fixture
def two_shards(tmp_path, meta):
    expert = write_shard(
        tmp_path / "expert" / "env=maze" / "demos.parquet",
        [make_episode(i, source="expert", success=True) for i in range(3)],
        meta,
    )
    explore = write_shard(
        tmp_path / "fedse" / "round=1" / "client=maze" / "explore.parquet",
        [make_episode(10 + i) for i in range(4)],  # even ids succeed
        meta,
    )
    return expert.path, explore.path


def test_buffer_is_expert_plus_successes_without_copies(tmp_path, two_shards):
    # Prepare
    expert, explore = two_shards
    buffer = Manifest(info={"round": 1}).extended(
        [shard_ref(expert), shard_ref(explore, select="success")]
    )

    # Execute
    path = write_manifest(
        tmp_path / "fedse" / "round=1" / "client=maze" / "buffer.json", buffer
    )
    table = load_episodes(path)

    # Assert
    assert table.num_rows == 3 + 2
    assert all(table["success"].to_pylist())
    stored = json.loads(path.read_text())
    assert [s["path"] for s in stored["shards"]] == [
        "../../../expert/env=maze/demos.parquet",
        "explore.parquet",
    ]
    assert stored["shards"][1]["select"] == "success"
    # the buffer references the shards; nothing was copied next to it
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "buffer.json",
        "explore.parquet",
    ]


def test_manifest_survives_moving_the_results_folder(tmp_path, two_shards):
    expert, explore = two_shards
    write_manifest(
        tmp_path / "m.json", Manifest([shard_ref(expert), shard_ref(explore)])
    )
    moved = tmp_path.parent / (tmp_path.name + "-moved")
    tmp_path.rename(moved)
    assert load_episodes(moved / "m.json").num_rows == 7


def test_extending_does_not_duplicate_a_shard(two_shards):
    expert, explore = two_shards
    first = Manifest([shard_ref(expert)])
    second = first.extended([shard_ref(expert), shard_ref(explore, select="success")])
    assert len(second.shards) == 2
    assert len(first.shards) == 1


def test_changed_shard_fails_with_its_name(tmp_path, two_shards, meta):
    expert, explore = two_shards
    path = write_manifest(
        tmp_path / "m.json", Manifest([shard_ref(expert), shard_ref(explore)])
    )
    write_shard(
        explore, [make_episode(99)], meta
    )  # regenerated behind the manifest's back
    with pytest.raises(StoreError, match=f"shard {explore} changed"):
        load_episodes(path)


def test_missing_shard_fails_with_its_name(tmp_path, two_shards):
    expert, explore = two_shards
    path = write_manifest(
        tmp_path / "m.json", Manifest([shard_ref(expert), shard_ref(explore)])
    )
    explore.unlink()
    with pytest.raises(StoreError, match=f"shard {explore} is missing"):
        read_manifest(path)


def test_malformed_manifest_names_the_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("{not json")
    with pytest.raises(StoreError, match=f"{path}: manifest is not valid JSON"):
        read_manifest(path)
    path.write_text(json.dumps({"shards": []}))
    with pytest.raises(StoreError, match="not an evoflow manifest"):
        read_manifest(path)


def test_empty_manifest_loads_an_empty_table(tmp_path):
    path = write_manifest(tmp_path / "m.json", Manifest())
    assert load_episodes(path).num_rows == 0
    assert load_episodes(path, columns=["success"]).column_names == ["success"]


def test_round_buffer_records_what_exploration_found(tmp_path, two_shards):
    from evoflow.store.manifest import build_buffer

    expert, explore = two_shards
    seed = write_manifest(tmp_path / "seed.json", Manifest([shard_ref(expert)]))
    for select, added in (("success", 2), ("all", 4)):  # 4 explored, ids 10, 12 won
        out = tmp_path / select / "buffer.json"
        info = build_buffer(out, seed, explore, select=select).info
        assert (info["explored_episodes"], info["explored_successes"]) == (4, 2)
        assert info["added_episodes"] == added

"""Schema version 2: new fields round-trip, and version-1 shards still read.

``fixtures/schema_v1.parquet`` was written by evoflow at commit a098c22 (schema
version 1: three episodes of the test helper of that time), so it is what a
user's cached results of an earlier evoflow contain.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evoflow.store import (
    SCHEMA_VERSION,
    ShardMeta,
    read_meta,
    read_shard,
    table_to_episodes,
    write_shard,
)
from evoflow.store.manifest import load_episodes, write_shards_manifest
from evoflow.store.query import connect
from tests.helpers import make_episode

V1 = Path(__file__).parent / "fixtures" / "schema_v1.parquet"


def test_new_fields_round_trip(tmp_path):
    episodes = [make_episode(i) for i in range(3)]
    write_shard(tmp_path / "s.parquet", episodes, ShardMeta("exp", "c" * 64, "m", 0))
    back = table_to_episodes(read_shard(tmp_path / "s.parquet"))
    assert back == episodes
    assert back[1].messages[2].logprobs == [-0.5, -1.25, -0.0625]
    assert back[1].extras == {"plan_score": 0.25, "tags": ["a"]}
    assert back[2].artifacts[0].path == "code/2/main.py"


def test_a_version_1_shard_reads_with_defaults_for_the_new_fields():
    assert read_meta(V1).schema_version == 1 and SCHEMA_VERSION == 2

    episodes = table_to_episodes(read_shard(V1))

    # Assert: what v1 stored is intact, what v2 added reads as its default
    assert [e.episode_id for e in episodes] == ["ep-0", "ep-1", "ep-2"]
    assert episodes[1].messages[2].content == "Thought: go down.\nAction: move down"
    assert episodes[1].messages[2].loss is True
    assert episodes[1].reward == 1.5 and episodes[1].n_tokens == 322
    assert all(m.token_ids is None and m.logprobs is None and m.reward is None
               for e in episodes for m in e.messages)  # fmt: skip
    assert {(e.group, e.sample, e.agent_role) for e in episodes} == {(None, 0, None)}
    assert all(e.extras == {} and e.artifacts == [] for e in episodes)


def test_a_version_1_shard_reads_by_column_and_through_a_manifest(tmp_path):
    table = read_shard(V1, columns=["episode_id", "sample", "messages"])
    assert table.column_names == ["episode_id", "sample", "messages"]
    assert table["sample"].to_pylist() == [0, 0, 0]

    shard = tmp_path / "old.parquet"
    shutil.copy(V1, shard)
    write_shards_manifest(tmp_path / "m.json", [shard])
    assert load_episodes(tmp_path / "m.json").num_rows == 3


def test_duckdb_queries_span_version_1_and_version_2_shards(tmp_path):
    shutil.copy(V1, tmp_path / "old.parquet")
    new = [make_episode(i, episode_id=f"new-{i}") for i in range(2)]
    write_shard(tmp_path / "new.parquet", new, ShardMeta("exp", "c" * 64, "m", 0))

    con = connect(tmp_path)
    rows = con.sql(
        "SELECT episode_id, sample, agent_role, extras FROM episodes ORDER BY ALL"
    ).fetchall()
    turns = con.sql(
        "SELECT episode_id, logprobs FROM turns WHERE role = 'assistant' ORDER BY ALL"
    ).fetchall()

    # Assert: version-1 rows read the version-2 defaults, as read_shard gives them
    assert rows[:3] == [(f"ep-{i}", 0, None, "{}") for i in range(3)]
    assert [r[:3] for r in rows[3:]] == [("new-0", 1, "solver"), ("new-1", 2, "solver")]
    assert turns[0] == ("ep-0", None)
    assert turns[3][0] == "new-0"
    assert turns[3][1] == pytest.approx([-0.5, -1.25, -0.0625])


def test_duckdb_reads_a_store_of_version_1_shards_only(tmp_path):
    shutil.copy(V1, tmp_path / "old.parquet")
    con = connect(tmp_path)
    assert con.sql("SELECT count(*), sum(sample) FROM episodes").fetchall() == [(3, 0)]
    nulls = con.sql("SELECT count(*) FROM turns WHERE token_ids IS NULL").fetchall()
    assert nulls == [(12,)]


def test_an_unknown_version_is_refused(tmp_path):
    import pyarrow.parquet as pq

    table = pq.read_table(V1)
    meta = dict(table.schema.metadata)
    meta[b"evoflow.schema_version"] = b"9"
    pq.write_table(table.replace_schema_metadata(meta), tmp_path / "x.parquet")
    with pytest.raises(Exception, match="schema version 9"):
        read_shard(tmp_path / "x.parquet")

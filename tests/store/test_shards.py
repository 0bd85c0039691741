from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from evoflow.errors import StoreError
from evoflow.store import read_meta, read_shard, table_to_episodes, write_shard
from evoflow.store.query import find_shards
from tests.helpers import make_episode


def test_every_field_round_trips(tmp_path, meta):
    # Prepare
    episodes = [make_episode(i) for i in range(3)]
    episodes[1].adapter_sha256 = None
    episodes[1].client = None
    episodes[2].messages[0].loss = None

    # Execute
    info = write_shard(tmp_path / "a.parquet", episodes, meta)
    back = table_to_episodes(read_shard(info.path))

    # Assert
    assert back == episodes
    assert info.rows == 3 and len(info.sha256) == 64


def test_metadata_records_provenance(tmp_path, meta):
    info = write_shard(tmp_path / "a.parquet", [make_episode()], meta)
    got = read_meta(info.path)
    assert got.experiment == "exp"
    assert got.config_hash == "c" * 64
    assert got.model_id == "tiny-llama"
    assert got.seed == 7
    assert got.adapter_sha256 is None
    assert got.schema_version == 2
    assert got.code_version.startswith("0.1.0")
    assert (
        pq.ParquetFile(info.path).metadata.row_group(0).column(0).compression == "ZSTD"
    )


def test_writer_failing_mid_write_leaves_nothing_readable(tmp_path, meta, monkeypatch):
    # Prepare: the Parquet writer emits half a file, then dies.
    def broken_write(table, where, **kwargs):
        with open(where, "wb") as fh:
            fh.write(b"PAR1" + b"\0" * 100)
        raise RuntimeError("killed mid-write")

    monkeypatch.setattr(pq, "write_table", broken_write)

    # Execute
    with pytest.raises(RuntimeError, match="killed mid-write"):
        write_shard(tmp_path / "round=1" / "explore.parquet", [make_episode()], meta)

    # Assert: no shard, no temp file, nothing a glob would pick up
    assert find_shards(tmp_path) == []
    assert list((tmp_path / "round=1").iterdir()) == []


def test_failed_rewrite_keeps_the_previous_shard(tmp_path, meta, monkeypatch):
    path = tmp_path / "a.parquet"
    write_shard(path, [make_episode(0)], meta)

    def broken_write(table, where, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken_write)
    with pytest.raises(OSError):
        write_shard(path, [make_episode(1), make_episode(2)], meta)
    assert read_shard(path).num_rows == 1


def test_invalid_episode_is_refused_and_nothing_written(tmp_path, meta):
    with pytest.raises(ValueError, match="source 'dreamed'"):
        write_shard(tmp_path / "a.parquet", [make_episode(source="dreamed")], meta)
    assert not (tmp_path / "a.parquet").exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated
        lambda raw: b"not parquet at all",  # foreign bytes
        lambda raw: raw[:4] + bytes(b ^ 0xFF for b in raw[4:-8]) + raw[-8:],  # garbled
    ],
    ids=["truncated", "foreign-bytes", "garbled"],
)
def test_corrupt_shard_fails_naming_its_path(tmp_path, meta, damage):
    path = tmp_path / "round=1" / "bad.parquet"
    write_shard(path, [make_episode(i) for i in range(5)], meta)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(StoreError, match=str(path)):
        read_shard(path)


def test_foreign_parquet_fails_naming_its_path(tmp_path):
    import pyarrow as pa

    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), path)
    with pytest.raises(StoreError, match=f"{path}: not an evoflow trajectory shard"):
        read_shard(path)


def test_other_schema_version_is_refused(tmp_path, meta):
    path = tmp_path / "old.parquet"
    write_shard(path, [make_episode()], meta)
    table = pq.read_table(path)
    kv = dict(table.schema.metadata)
    kv[b"evoflow.schema_version"] = b"0"
    pq.write_table(table.replace_schema_metadata(kv), path)
    with pytest.raises(StoreError, match="schema version 0"):
        read_shard(path)

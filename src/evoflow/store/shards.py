"""Atomic Parquet shards of episodes, with provenance in the key-value metadata.

A shard is written to a hidden temp file in its destination folder and moved into
place with ``os.replace``, so a reader sees either the whole shard or none of it.
Temp names do not end in ``.parquet``, so globs over results never pick them up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evoflow.atomic import atomic_path
from evoflow.errors import StoreError
from evoflow.provenance import code_version, sha256_file
from evoflow.store.schema import (
    SCHEMA_VERSION,
    Episode,
    check_table,
    episodes_to_table,
)
from evoflow.store.upgrade import READABLE, stored_columns, upgrade

META_PREFIX = "evoflow."
COMPRESSION = "zstd"


@dataclass(frozen=True)
class ShardMeta:
    """Provenance stored in every shard's Parquet key-value metadata."""

    experiment: str
    config_hash: str
    model_id: str
    seed: int
    adapter_sha256: str | None = None
    code_version: str = ""
    schema_version: int = SCHEMA_VERSION

    def to_kv(self) -> dict[bytes, bytes]:
        values = asdict(self)
        values["code_version"] = self.code_version or code_version()
        return {
            f"{META_PREFIX}{k}".encode(): ("" if v is None else str(v)).encode()
            for k, v in values.items()
        }

    @classmethod
    def from_kv(cls, kv: dict[bytes, bytes]) -> ShardMeta:
        raw = {
            k.decode()[len(META_PREFIX) :]: v.decode()
            for k, v in kv.items()
            if k.startswith(META_PREFIX.encode())
        }
        return cls(
            experiment=raw.get("experiment", ""),
            config_hash=raw.get("config_hash", ""),
            model_id=raw.get("model_id", ""),
            seed=int(raw.get("seed") or 0),
            adapter_sha256=raw.get("adapter_sha256") or None,
            code_version=raw.get("code_version", ""),
            schema_version=int(raw.get("schema_version") or 0),
        )


@dataclass(frozen=True)
class ShardInfo:
    """What a manifest records about a written shard."""

    path: Path
    rows: int
    sha256: str


def write_shard(
    path: str | Path, episodes: list[Episode] | pa.Table, meta: ShardMeta
) -> ShardInfo:
    """Validate ``episodes`` and write them atomically as a zstd Parquet shard.

    Raises
    ------
    ValueError
        when an episode or column violates the schema (nothing is written).
    """
    path = Path(path)
    if isinstance(episodes, pa.Table):
        table = check_table(episodes, origin=str(path))
    else:
        table = episodes_to_table(episodes)
    table = table.replace_schema_metadata(meta.to_kv())
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression=COMPRESSION)
    return ShardInfo(path=path, rows=table.num_rows, sha256=sha256_file(path))


def open_shard(path: str | Path) -> pq.ParquetFile:
    """Open a shard after checking it is ours and of a schema version we read.

    Raises
    ------
    StoreError
        naming the file when it is missing, not Parquet, foreign, of another
        schema version or missing columns.
    """
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: shard not found")
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise StoreError(f"{path}: corrupt or not a Parquet file ({exc})") from None
    kv = parquet.schema_arrow.metadata or {}
    version = kv.get(f"{META_PREFIX}schema_version".encode())
    if version is None:
        raise StoreError(
            f"{path}: not an evoflow trajectory shard (no {META_PREFIX}schema_version "
            "in its Parquet metadata)"
        )
    known = {str(v): v for v in READABLE}
    if version.decode() not in known:
        raise StoreError(
            f"{path}: shard schema version {version.decode()}, this evoflow reads "
            f"versions {', '.join(known)}; regenerate the shard or use a matching evoflow"
        )
    columns = READABLE[known[version.decode()]]
    missing = [n for n in columns if n not in parquet.schema_arrow.names]
    if missing:
        raise StoreError(f"{path}: shard lacks columns {missing}")
    return parquet


def read_shard(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """Read a shard (or some of its columns) as a table of ``EPISODE_SCHEMA``."""
    parquet = open_shard(path)
    version = int(
        parquet.schema_arrow.metadata[f"{META_PREFIX}schema_version".encode()]
    )
    try:
        table = parquet.read(columns=stored_columns(version, columns))
        return upgrade(table, version, columns)
    except (pa.ArrowException, OSError) as exc:
        raise StoreError(
            f"{path}: corrupt shard, cannot read its data ({exc})"
        ) from None


def read_meta(path: str | Path) -> ShardMeta:
    """The provenance of a shard."""
    return ShardMeta.from_kv(open_shard(path).schema_arrow.metadata or {})

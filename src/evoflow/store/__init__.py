"""The trajectory store: episode schema, atomic shards, manifests, DuckDB views."""

from __future__ import annotations

from evoflow.store.agenttraj import read_agenttraj, write_agenttraj
from evoflow.store.manifest import (
    Manifest,
    ShardRef,
    load_episodes,
    read_manifest,
    shard_ref,
    write_manifest,
)
from evoflow.store.schema import (
    EPISODE_SCHEMA,
    SCHEMA_VERSION,
    Artifact,
    Episode,
    Message,
    table_to_episodes,
)
from evoflow.store.shards import (
    ShardInfo,
    ShardMeta,
    read_meta,
    read_shard,
    write_shard,
)

__all__ = [
    "EPISODE_SCHEMA",
    "SCHEMA_VERSION",
    "Artifact",
    "Episode",
    "Manifest",
    "Message",
    "ShardInfo",
    "ShardMeta",
    "ShardRef",
    "load_episodes",
    "read_agenttraj",
    "read_manifest",
    "read_meta",
    "read_shard",
    "shard_ref",
    "table_to_episodes",
    "write_agenttraj",
    "write_manifest",
    "write_shard",
]

"""Reading shards written by an older schema version (the compatibility rule).

Rule: a shard is never rewritten or discarded because the schema moved on. A
reader upgrades what it reads, in memory, to the current ``EPISODE_SCHEMA``;
every version change so far only *adds* columns (and message fields), which
read as their defaults — null token ids, log-probs, rewards and validity; no
group, sample 0, no role, ``{}`` extras, no artifacts. Cached artifacts of an
older evoflow therefore stay valid inputs, and their content hashes (in the
manifests) still match. A version this code does not know is refused.
"""

from __future__ import annotations

import pyarrow as pa

from evoflow.store.schema import EPISODE_SCHEMA, MESSAGE_TYPE, SCHEMA_VERSION

# Column and message-field names each known version has.
V1_MESSAGE_FIELDS = ("role", "content", "loss")
V1_COLUMNS = tuple(
    n for n in EPISODE_SCHEMA.names
    if n not in ("group", "sample", "agent_role", "extras", "artifacts")
)  # fmt: skip
READABLE = {1: V1_COLUMNS, SCHEMA_VERSION: tuple(EPISODE_SCHEMA.names)}


def stored_columns(version: int, columns: list[str] | None) -> list[str] | None:
    """The requested columns that a shard of ``version`` actually holds."""
    if columns is None:
        return None
    return [c for c in columns if c in READABLE[version]]


def upgrade(table: pa.Table, version: int, columns: list[str] | None) -> pa.Table:
    """``table`` (read from a shard of ``version``) as the current schema's columns."""
    if version == SCHEMA_VERSION:
        return table
    wanted = columns or list(EPISODE_SCHEMA.names)
    arrays = []
    for name in wanted:
        if name == "messages" and name in table.column_names:
            arrays.append(_upgrade_messages(table[name]))
        elif name in table.column_names:
            arrays.append(table[name])
        else:
            arrays.append(_default(name, table.num_rows))
    fields = [EPISODE_SCHEMA.field(n) for n in wanted]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, table.schema.metadata))


def _default(name: str, rows: int) -> pa.Array:
    kind = EPISODE_SCHEMA.field(name).type
    value = {"sample": 0, "extras": "{}", "artifacts": []}.get(name)
    return pa.array([value] * rows, type=kind)


def _upgrade_messages(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """list<struct{role, content, loss}> → the current message struct (nulls added)."""
    chunks = []
    for chunk in column.chunks:
        values = chunk.values  # the flattened structs of every list
        children = [
            values.field(f.name) if f.name in V1_MESSAGE_FIELDS
            else pa.nulls(len(values), type=f.type)
            for f in MESSAGE_TYPE
        ]  # fmt: skip
        structs = pa.StructArray.from_arrays(children, fields=list(MESSAGE_TYPE))
        offsets = chunk.offsets
        chunks.append(pa.ListArray.from_arrays(offsets, structs, mask=chunk.is_null()))
    return pa.chunked_array(chunks, type=pa.list_(MESSAGE_TYPE))

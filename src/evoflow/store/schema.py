"""The episode schema: one row per episode, messages nested as a list of structs.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or retyped; readers
refuse shards of another version instead of guessing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

SCHEMA_VERSION = 1

SOURCES = ("expert", "explore", "eval")
TERMINATIONS = ("done", "max_turns", "invalid", "context", "error")
ROLES = ("system", "user", "assistant")

MESSAGE_TYPE = pa.struct(
    [
        pa.field("role", pa.string(), nullable=False),
        pa.field("content", pa.string(), nullable=False),
        # True: the trainer learns this message; False: context only; null: unset
        # (AgentTraj files leave it null on human turns).
        pa.field("loss", pa.bool_(), nullable=True),
    ]
)

EPISODE_SCHEMA = pa.schema(
    [
        pa.field("experiment", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),
        pa.field("round", pa.int32(), nullable=False),
        pa.field("client", pa.string(), nullable=True),
        pa.field("env", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("episode_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("model_id", pa.string(), nullable=False),
        pa.field("adapter_sha256", pa.string(), nullable=True),
        pa.field("seed", pa.int64(), nullable=False),
        pa.field("temperature", pa.float64(), nullable=False),
        pa.field("horizon", pa.int32(), nullable=False),
        pa.field("reward", pa.float64(), nullable=False),
        pa.field("success", pa.bool_(), nullable=False),
        pa.field("n_turns", pa.int32(), nullable=False),
        pa.field("n_invalid", pa.int32(), nullable=False),
        pa.field("n_tokens", pa.int64(), nullable=False),
        pa.field("termination", pa.string(), nullable=False),
        pa.field("messages", pa.list_(MESSAGE_TYPE), nullable=False),
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)


@dataclass
class Message:
    """One chat message of an episode."""

    role: str
    content: str
    loss: bool | None = None


@dataclass
class Episode:
    """One episode: who played which task how, what happened, and the full chat."""

    experiment: str
    method: str
    env: str
    task_id: str
    split: str
    episode_id: str
    source: str
    model_id: str
    round: int = 0
    client: str | None = None
    adapter_sha256: str | None = None
    seed: int = 0
    temperature: float = 0.0
    horizon: int = 0
    reward: float = 0.0
    success: bool = False
    n_turns: int = 0
    n_invalid: int = 0
    n_tokens: int = 0
    termination: str = "done"
    messages: list[Message] = field(default_factory=list)
    created_at: dt.datetime = field(
        default_factory=lambda: dt.datetime.now(dt.UTC).replace(microsecond=0)
    )

    def validate(self) -> None:
        """Raise ``ValueError`` naming the field when a value is out of its domain."""
        if self.source not in SOURCES:
            raise ValueError(
                f"episode {self.episode_id}: source {self.source!r} is not one of "
                f"{', '.join(SOURCES)}"
            )
        if self.termination not in TERMINATIONS:
            raise ValueError(
                f"episode {self.episode_id}: termination {self.termination!r} is not "
                f"one of {', '.join(TERMINATIONS)}"
            )
        for i, message in enumerate(self.messages):
            if message.role not in ROLES:
                raise ValueError(
                    f"episode {self.episode_id}: messages[{i}].role {message.role!r} "
                    f"is not one of {', '.join(ROLES)}"
                )
        if self.adapter_sha256 is not None and len(self.adapter_sha256) != 64:
            raise ValueError(
                f"episode {self.episode_id}: adapter_sha256 must be 64 hex digits, "
                f"got {self.adapter_sha256!r}"
            )

    def to_row(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)
        row["messages"] = [dataclasses.asdict(m) for m in self.messages]
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Episode:
        values = {f.name: row[f.name] for f in dataclasses.fields(cls)}
        values["messages"] = [Message(**m) for m in row["messages"]]
        return cls(**values)


def episodes_to_table(episodes: list[Episode]) -> pa.Table:
    """Validate episodes and pack them into a table of ``EPISODE_SCHEMA``."""
    for episode in episodes:
        episode.validate()
    return pa.Table.from_pylist([e.to_row() for e in episodes], schema=EPISODE_SCHEMA)


def table_to_episodes(table: pa.Table) -> list[Episode]:
    """Unpack a table of ``EPISODE_SCHEMA`` into episodes."""
    return [Episode.from_row(row) for row in table.to_pylist()]


def check_table(table: pa.Table, origin: str) -> pa.Table:
    """Return ``table`` cast to ``EPISODE_SCHEMA``, or raise naming ``origin``."""
    missing = [n for n in EPISODE_SCHEMA.names if n not in table.schema.names]
    extra = [n for n in table.schema.names if n not in EPISODE_SCHEMA.names]
    if missing or extra:
        raise ValueError(
            f"{origin}: columns do not match the episode schema "
            f"(missing: {missing or 'none'}; unexpected: {extra or 'none'})"
        )
    table = table.select(EPISODE_SCHEMA.names)
    try:
        table = table.cast(EPISODE_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ValueError(
            f"{origin}: column types do not match the schema ({exc})"
        ) from None
    for schema_field in EPISODE_SCHEMA:
        if not schema_field.nullable and table[schema_field.name].null_count:
            raise ValueError(f"{origin}: column {schema_field.name!r} has null values")
    for name, allowed in (("source", SOURCES), ("termination", TERMINATIONS)):
        bad = pc.filter(
            table[name], pc.invert(pc.is_in(table[name], pa.array(allowed)))
        )
        if len(bad):
            raise ValueError(
                f"{origin}: column {name!r} has value {bad[0].as_py()!r}; "
                f"allowed: {', '.join(allowed)}"
            )
    return table

"""The episode schema: one row per episode, messages nested as a list of structs.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or retyped. Readers
upgrade shards of an older version they know (``evoflow.store.upgrade``: every
change so far only adds columns, filled with their defaults on read) and refuse
any other version instead of guessing.

Version 2 adds what RL, multi-role and code-writing methods need. Per assistant
message: the generated ``token_ids`` and their ``logprobs`` (log-probability of
each sampled token under the model's own distribution, softmax of the raw
logits, when the backend gives them), and the ``reward`` and ``valid``ity of the
action it took. Per episode: ``group`` and ``sample`` (the episodes sampled for
one task in a GRPO-style group share ``group``; ``sample`` numbers them),
``agent_role`` (which role of a multi-role method played it), ``extras`` (a JSON
object of family-specific fields) and ``artifacts`` (files an episode produced,
e.g. code, by name, path and sha256).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

SCHEMA_VERSION = 2

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
        # version 2: what the backend generated, and what the action earned
        pa.field("token_ids", pa.list_(pa.int32()), nullable=True),
        pa.field("logprobs", pa.list_(pa.float32()), nullable=True),
        pa.field("reward", pa.float64(), nullable=True),
        pa.field("valid", pa.bool_(), nullable=True),
    ]
)

ARTIFACT_TYPE = pa.struct(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("sha256", pa.string(), nullable=True),
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
        # version 2
        pa.field("group", pa.string(), nullable=True),
        pa.field("sample", pa.int32(), nullable=False),
        pa.field("agent_role", pa.string(), nullable=True),
        pa.field("extras", pa.string(), nullable=False),  # a JSON object
        pa.field("artifacts", pa.list_(ARTIFACT_TYPE), nullable=False),
    ]
)


@dataclass
class Message:
    """One chat message of an episode."""

    role: str
    content: str
    loss: bool | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    reward: float | None = None
    valid: bool | None = None


@dataclass
class Artifact:
    """A file an episode produced (generated code, a log), by reference."""

    name: str
    path: str
    sha256: str | None = None


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
    group: str | None = None
    sample: int = 0
    agent_role: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    artifacts: list[Artifact] = field(default_factory=list)

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
        self._validate_v2()

    def _validate_v2(self) -> None:
        for i, m in enumerate(self.messages):
            if m.token_ids is not None and m.logprobs is not None:
                if len(m.token_ids) != len(m.logprobs):
                    raise ValueError(
                        f"episode {self.episode_id}: messages[{i}] has "
                        f"{len(m.token_ids)} token_ids but {len(m.logprobs)} logprobs"
                    )
        if self.sample < 0:
            raise ValueError(f"episode {self.episode_id}: sample must be >= 0")
        if not isinstance(self.extras, dict):
            raise ValueError(
                f"episode {self.episode_id}: extras must be a JSON object (a dict), "
                f"got {type(self.extras).__name__}"
            )
        try:
            json.dumps(self.extras)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"episode {self.episode_id}: extras is not JSON-serialisable ({exc})"
            ) from None

    def to_row(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)
        row["extras"] = json.dumps(self.extras, sort_keys=True)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Episode:
        values = {f.name: row[f.name] for f in dataclasses.fields(cls)}
        values["messages"] = [Message(**m) for m in row["messages"]]
        values["extras"] = json.loads(row["extras"])
        values["artifacts"] = [Artifact(**a) for a in row["artifacts"]]
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

"""SAGE's question pool: the seed problems and every accepted Challenger question.

The pool only grows: an item is never removed or changed, and a question
whose normalised text is already in it is refused as a duplicate. On disk a
pool is one Parquet file per span holding the items that span added (span 0:
the seed set), so the union of a run's files up to span k is the pool after k
and a finished span's file never changes. ``evoflow query`` reads them as the
``pool`` view (files named ``POOL_FILE``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evoflow.atomic import atomic_path
from evoflow.sage.problems import Problem
from evoflow.store.query import TABLE_FILES

POOL_FILE = TABLE_FILES["pool"]
OFFERS = ("accepted", "rejected", "duplicate")
POOL_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("tests", pa.list_(pa.string()), nullable=False),
        pa.field("solution", pa.string(), nullable=False),
        pa.field("level", pa.int32(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("step", pa.int32(), nullable=False),
        pa.field("parent", pa.string(), nullable=True),
        pa.field("question_score", pa.float64(), nullable=True),
        pa.field("solve_rate", pa.float64(), nullable=True),
        pa.field("key", pa.string(), nullable=False),
    ]
)


@dataclass(frozen=True)
class Entry:
    """A pool item: the problem and where it came from (step 0: the seed set)."""

    problem: Problem
    step: int = 0
    parent: str | None = None  # the reference problem the Challenger was shown
    question_score: float | None = None  # Norm(Critic score)
    solve_rate: float | None = None  # mean verified success of the Solver's samples


def text_key(question: str) -> str:
    """Duplicate key: the question lower-cased, punctuation and spacing dropped."""
    words = re.findall(r"[a-z0-9]+", question.lower())
    return hashlib.sha256(" ".join(words).encode()).hexdigest()[:16]


class Pool:
    """The items so far, in the order they joined."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries: list[Entry] = []
        self._keys: set[str] = set()
        for entry in entries:
            if self.offer(entry, True) != "accepted":
                raise ValueError(f"pool item {entry.problem.id} repeats a question")

    def __len__(self) -> int:
        return len(self.entries)

    def offer(self, entry: Entry, accept: bool) -> str:
        """Add ``entry`` when ``accept`` and its question is new; one of OFFERS."""
        if not accept:
            return "rejected"
        key = text_key(entry.problem.question)
        if key in self._keys:
            return "duplicate"
        self._keys.add(key)
        self.entries.append(entry)
        return "accepted"

    def sample(self, rng, n: int, kind: str | None = None) -> list[Entry]:
        """``n`` items drawn uniformly (with replacement), of ``kind`` if given."""
        items = [e for e in self.entries if kind is None or e.problem.kind == kind]
        if not items:
            raise ValueError(f"the pool has no items of kind {kind!r} to draw")
        return [items[rng.randrange(len(items))] for _ in range(n)]


def write(entries: list[Entry], path: str | Path) -> Path:
    """Write ``entries`` as one pool file, atomically."""
    path = Path(path)
    rows = [_row(e) for e in entries]
    table = pa.Table.from_pylist(rows, schema=POOL_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path


def read(paths: Iterable[str | Path]) -> Pool:
    """The pool made of these files, in order; a file that is not a pool file
    fails with its name."""
    entries = []
    for path in paths:
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as error:
            raise ValueError(f"{path}: not a readable pool file ({error})") from None
        missing = set(POOL_SCHEMA.names) - set(table.column_names)
        if missing:
            raise ValueError(f"{path}: not a pool file, missing {sorted(missing)}")
        entries += [_entry(row) for row in table.to_pylist()]
    return Pool(entries)


def _row(entry: Entry) -> dict:
    p = entry.problem
    return {
        "id": p.id, "kind": p.kind, "question": p.question, "answer": p.answer,
        "tests": list(p.tests), "solution": p.solution, "level": p.level,
        "source": p.source, "step": entry.step, "parent": entry.parent,
        "question_score": entry.question_score, "solve_rate": entry.solve_rate,
        "key": text_key(p.question),
    }  # fmt: skip


def _entry(row: dict) -> Entry:
    problem = Problem(
        id=row["id"], kind=row["kind"], question=row["question"],
        answer=row["answer"], tests=tuple(row["tests"]), solution=row["solution"],
        level=row["level"], source=row["source"],
    )  # fmt: skip
    return Entry(problem, row["step"], row["parent"], row["question_score"],
                 row["solve_rate"])  # fmt: skip


def seeded(problems: Iterable[Problem]) -> Pool:
    """A pool of seed problems (step 0, source kept)."""
    return Pool(Entry(p) for p in problems)

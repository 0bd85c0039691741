"""The explorer's queries over the store's ``episodes`` view. A shard that
cannot be read is left out and named (the pages show it); a shard that breaks
while serving is found on the next failed query, and the store is re-read."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import duckdb

from evoflow.store.query import connect, find_shards
from evoflow.store.shards import open_shard

COLUMNS = ("episode_id", "experiment", "method", "round", "client", "env", "task_id",
           "split", "success", "reward", "n_turns", "n_invalid", "termination")  # fmt: skip
CHOICES_TTL_S = 30.0
CHOICES = ("experiment", "method", "round", "client", "env", "split", "termination")


@dataclass(frozen=True)
class Filters:
    """What the episode list is narrowed to ('' or None: any)."""

    experiment: str = ""
    method: str = ""
    round: int | None = None
    client: str = ""
    env: str = ""
    success: bool | None = None
    termination: str = ""
    split: str = ""

    def where(self) -> tuple[str, list]:
        """A SQL condition and its parameters."""
        parts, values = [], []
        for f in fields(self):
            value = getattr(self, f.name)
            if value not in ("", None):
                parts.append(f'"{f.name}" = ?')
                values.append(value)
        return (" AND ".join(parts) or "TRUE"), values

    def query(self) -> dict:
        """The filters as URL query parameters (set ones only)."""
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}


def readable(shard: Path, deep: bool) -> None:
    """Raise, naming the file, if the shard is not ours or (``deep``) if any
    of its pages cannot be decoded."""
    handle = open_shard(shard)
    if deep:
        for _ in handle.iter_batches(batch_size=4096):
            pass


class Store:
    """The store under ``root``, read through DuckDB, never written."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.skipped: dict[str, str] = {}
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self, deep: bool = False) -> None:
        """Re-scan the shards: the readable ones make the view, the others are
        named. ``deep`` also decodes every page (after a query failed on one)."""
        good, skipped = [], {}
        for shard in find_shards(self.root):
            try:
                readable(shard, deep)
                good.append(shard)
            except Exception as error:  # noqa: BLE001 - any unreadable file is named, not fatal
                skipped[str(shard)] = str(error)
        with self._lock:
            old, self._con = (
                getattr(self, "_con", None),
                connect(self.root, check=False, shards=good),
            )
            self.skipped = skipped
            self._choices = None
        if old is not None:
            old.close()

    def rows(self, sql: str, values: list | None = None) -> list[dict]:
        """Rows of ``sql`` as dicts; a read error re-scans the store once,
        decoding every shard, so the broken one is named and left out."""
        for attempt in (0, 1):
            try:
                with self._lock:  # one connection (its registered tables are its own)
                    result = self._con.execute(sql, values or [])
                    names = [d[0] for d in result.description]
                    found = result.fetchall()
                return [dict(zip(names, row, strict=True)) for row in found]
            except duckdb.Error:
                if attempt:
                    raise
                self.refresh(deep=True)
        return []

    def choices(self) -> dict[str, list]:
        """The values each filter can take (read again at most every 30 s)."""
        now, cached = time.monotonic(), self._choices
        if cached is None or now - cached[0] > CHOICES_TTL_S:
            cached = self._choices = (now, self._distinct())
        return cached[1]

    def _distinct(self) -> dict[str, list]:
        if not self._has_episodes():
            return {c: [] for c in CHOICES}
        return {c: [r["v"] for r in self.rows(
            f'SELECT DISTINCT "{c}" AS v FROM episodes WHERE "{c}" IS NOT NULL ORDER BY 1')]
            for c in CHOICES}  # fmt: skip

    def episodes(
        self, filters: Filters, limit: int = 100, offset: int = 0
    ) -> tuple[list[dict], int]:
        """A page of matching episodes (newest method/round first) and their count."""
        if not self._has_episodes():
            return [], 0
        where, values = filters.where()
        columns = ", ".join(f'"{c}"' for c in COLUMNS)
        page = self.rows(f"SELECT {columns} FROM episodes WHERE {where} "
                         "ORDER BY experiment, method, round, env, task_id, episode_id "
                         "LIMIT ? OFFSET ?", [*values, limit, offset])  # fmt: skip
        total = self.rows(f"SELECT count(*) AS n FROM episodes WHERE {where}", values)[
            0
        ]["n"]
        return page, total

    def success_by_round(self, filters: Filters) -> list[dict]:
        """Success rate per (env, method, round) of the matching episodes."""
        if not self._has_episodes():
            return []
        where, values = filters.where()
        return self.rows("SELECT env, method, round, avg(success::INT) AS rate, count(*) AS n "
                         f"FROM episodes WHERE {where} GROUP BY ALL ORDER BY env, method, round",
                         values)  # fmt: skip

    def episode(self, episode_id: str) -> dict | None:
        """One episode with its messages, or None."""
        found = self.rows(
            "SELECT * REPLACE (created_at::VARCHAR AS created_at) FROM episodes "
            "WHERE episode_id = ? LIMIT 1",
            [episode_id],
        )
        return found[0] if found else None

    def pick(
        self, method: str, task_id: str, env: str, round: int | None
    ) -> dict | None:
        """A method's episode of a task: of ``round``, else of its last round."""
        rounds = "AND round = ?" if round is not None else ""
        values = [method, task_id, env] + ([round] if round is not None else [])
        found = self.rows("SELECT * REPLACE (created_at::VARCHAR AS created_at) FROM episodes "
            "WHERE method = ? AND task_id = ? AND env = ? "
                          f"{rounds} ORDER BY round DESC, episode_id LIMIT 1", values)  # fmt: skip
        return found[0] if found else None

    def _has_episodes(self) -> bool:
        return bool(self.rows("SELECT count(*) AS n FROM duckdb_views() "
                              "WHERE view_name = 'episodes'")[0]["n"])  # fmt: skip

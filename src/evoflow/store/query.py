"""DuckDB views over every trajectory shard under a results folder.

``episodes``: one row per episode from all shards. Folders named ``key=value``
(``round=3/client=maze``) become columns, as in a hive-partitioned dataset; our
layouts nest different keys (``expert/env=…`` beside ``round=…/client=…``), which
DuckDB's own hive reader refuses to mix, so shards are grouped by their key set
and the groups are unioned by column name. Folder values win over stored ones.

``turns``: one row per message (``UNNEST`` of ``episodes.messages``), with the
episode's columns and a 1-based ``message_index``.

Other tables that methods keep beside their episodes have a file name of their
own (``TABLE_FILES``) and a view of that name over every such file, with the
folder keys as columns; e.g. ``pool`` (SAGE's question pool, one file per span) and
``helmsman_attempts`` (Helmsman's repair attempts, one file per task).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import duckdb

from evoflow.store.schema import EPISODE_SCHEMA
from evoflow.store.shards import open_shard

HIVE_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([^/]*)$")
# view name -> file name (not episodes)
TABLE_FILES = {"pool": "pool.parquet", "helmsman_attempts": "attempts.parquet"}


def find_shards(root: str | Path, table: str | None = None) -> list[Path]:
    """Every episode shard under ``root`` (``*.parquet`` but the other tables'
    files), or every file of ``table``; sorted, skipping hidden files/folders."""
    root = Path(root)
    if not root.exists():
        return []
    others = set(TABLE_FILES.values())
    found = []
    for path in root.rglob("*.parquet" if table is None else TABLE_FILES[table]):
        parts = path.relative_to(root).parts
        if any(p.startswith(".") for p in parts):
            continue
        if table is not None or path.name not in others:
            found.append(path)
    return sorted(found)


def hive_keys(path: Path, root: Path) -> tuple[str, ...]:
    """The ``key=value`` folder names between ``root`` and ``path``, in order."""
    keys = []
    for part in path.relative_to(root).parts[:-1]:
        match = HIVE_SEGMENT.match(part)
        if match:
            keys.append(match.group(1))
    return tuple(keys)


def connect(
    root: str | Path = "results",
    database: str = ":memory:",
    check: bool = True,
    shards: list[Path] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the ``episodes`` and ``turns`` views.

    Parameters
    ----------
    root
        folder scanned recursively for shards.
    database
        DuckDB database (in memory by default; the views reference the files).
    check
        open every shard first, so a corrupt or foreign file fails with its name.
    shards
        the episode shards to read (default: every one under ``root``).
    """
    root = Path(root)
    shards = find_shards(root) if shards is None else shards
    if check:
        for shard in shards:
            open_shard(shard)
    con = duckdb.connect(database)
    con.execute(
        f"CREATE OR REPLACE VIEW episodes AS {_episodes_sql(shards, root, con)}"
    )
    con.execute(
        "CREATE OR REPLACE VIEW turns AS "
        "SELECT * EXCLUDE (messages), "
        "generate_subscripts(messages, 1) AS message_index, "
        "unnest(messages, recursive := true) FROM episodes"
    )
    for table in TABLE_FILES:
        files = find_shards(root, table)
        if files:
            con.execute(f"CREATE OR REPLACE VIEW {table} AS {_table_sql(files, root)}")
    return con


def _episodes_sql(
    shards: list[Path], root: Path, con: duckdb.DuckDBPyConnection
) -> str:
    # Every column of the current schema exists even when all shards are older
    # (the empty table joins the union); older shards read defaults as
    # ``evoflow.store.upgrade`` defines them.
    con.register("_no_episodes", EPISODE_SCHEMA.empty_table())
    empty = "SELECT *, NULL::VARCHAR AS shard FROM _no_episodes"
    if not shards:
        return empty
    union = " UNION ALL BY NAME ".join([empty, *_selects(shards, root, "shard")])
    return (
        "SELECT * REPLACE (coalesce(sample, 0) AS sample, "
        "coalesce(extras, '{}') AS extras, coalesce(artifacts, []) AS artifacts) "
        f"FROM ({union})"
    )


def _table_sql(files: list[Path], root: Path) -> str:
    return " UNION ALL BY NAME ".join(_selects(files, root, "file"))


def _selects(files: list[Path], root: Path, name_column: str) -> list[str]:
    """One ``read_parquet`` per set of folder keys (DuckDB's hive reader wants
    one key set per call), to be unioned by column name."""
    groups: dict[tuple[str, ...], list[Path]] = defaultdict(list)
    for path in files:
        groups[tuple(sorted(hive_keys(path, root)))].append(path)
    selects = []
    for keys, members in sorted(groups.items()):
        listing = ", ".join(_quote(str(f)) for f in members)
        hive = "true" if keys else "false"
        selects.append(
            f"SELECT * FROM read_parquet([{listing}], hive_partitioning={hive}, "
            f"union_by_name=true, filename='{name_column}')"
        )
    return selects


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


STATS_SQL = """
SELECT experiment, source, env,
       count(*) AS episodes,
       round(avg(success::INT), 3) AS success_rate,
       round(avg(n_turns), 2) AS mean_turns,
       sum(n_tokens) AS tokens
FROM episodes
GROUP BY ALL
ORDER BY ALL
"""


def stats(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Episodes, success rate, mean turns and tokens by experiment × source × env."""
    return con.sql(STATS_SQL)

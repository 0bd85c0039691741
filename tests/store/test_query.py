from __future__ import annotations

import pytest

from evoflow.cli import main
from evoflow.store import write_shard
from evoflow.store.query import connect
from tests.helpers import make_episode


@pytest.fixture
def results(tmp_path, meta):
    root = tmp_path / "results"
    write_shard(
        root / "exp" / "expert" / "env=wordle" / "demos.parquet",
        [
            make_episode(i, env="wordle", client=None, round=0, source="expert")
            for i in range(2)
        ],
        meta,
    )
    for rnd in (1, 2):
        write_shard(
            root / "exp" / "fedse" / f"round={rnd}" / "client=maze" / "explore.parquet",
            [make_episode(10 * rnd + i, round=rnd) for i in range(4)],
            meta,
        )
    # A layout with a key that is not a stored column: it must become a column.
    write_shard(
        root
        / "exp"
        / "rank=16"
        / "fedse"
        / "round=1"
        / "client=maze"
        / "explore.parquet",
        [make_episode(50 + i, round=1) for i in range(3)],
        meta,
    )
    return root


def test_hive_folders_become_columns(results):
    con = connect(results)
    rows = con.sql(
        "SELECT rank, round, client, count(*) FROM episodes "
        "WHERE source = 'explore' GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [(16, 1, "maze", 3), (None, 1, "maze", 4), (None, 2, "maze", 4)]


def test_folder_values_win_over_stored_values(results, meta):
    write_shard(
        results / "exp" / "fedse" / "round=7" / "client=maze" / "explore.parquet",
        [make_episode(0, round=3)],
        meta,
    )
    con = connect(results)
    assert con.sql("SELECT max(round) FROM episodes").fetchall()[0] == (7,)


def test_turns_unnest_messages(results):
    con = connect(results)
    total = con.sql("SELECT count(*) FROM episodes").fetchall()[0][0]
    rows = con.sql(
        "SELECT message_index, role, loss FROM turns WHERE episode_id = 'ep-10'"
    ).fetchall()
    assert rows == [
        (1, "system", None),
        (2, "user", None),
        (3, "assistant", True),
        (4, "user", False),
    ]
    assert con.sql("SELECT count(*) FROM turns").fetchall()[0][0] == 4 * total


def test_empty_results_still_have_views(tmp_path):
    con = connect(tmp_path / "nothing")
    assert con.sql("SELECT count(*) FROM episodes").fetchall()[0] == (0,)
    assert con.sql("SELECT count(*) FROM turns").fetchall()[0] == (0,)


def test_query_cli_prints_results(results, capsys):
    code = main(
        [
            "query",
            "--results",
            str(results),
            "--format",
            "csv",
            "SELECT env, count(*) AS n FROM episodes GROUP BY env ORDER BY env",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.splitlines() == ["env,n", "maze,11", "wordle,2"]


def test_query_cli_stats(results, capsys):
    assert main(["query", "--stats", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "4 shards under" in out and "wordle" in out


def test_query_cli_names_a_corrupt_shard(results, capsys):
    bad = results / "exp" / "fedse" / "round=1" / "client=maze" / "explore.parquet"
    bad.write_bytes(b"garbage")
    assert main(["query", "--results", str(results), "SELECT 1"]) == 2
    assert str(bad) in capsys.readouterr().err


def test_query_cli_reports_bad_sql_without_traceback(results, capsys):
    assert main(["query", "--results", str(results), "SELECT nope FROM episodes"]) == 2
    err = capsys.readouterr().err
    assert "query failed" in err and "Traceback" not in err

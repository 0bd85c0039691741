"""Table 1 over seeds, from hand-written outcomes files (hand-worked numbers)."""

from __future__ import annotations

import pytest

from evoflow.cli import main
from evoflow.report.seeds import SeedsError, cell, difference, markdown, read_report

HEADER = "method,round,env,task,successes,episodes\n"


def report(root, name, lines, pairs=()):
    """A report folder with an outcomes.csv (and a comparisons.csv of ``pairs``)."""
    folder = root / name
    folder.mkdir()
    (folder / "outcomes.csv").write_text(HEADER + "".join(f"{x}\n" for x in lines))
    if pairs:
        rows = "".join(f"{a},{b}\n" for a, b in pairs)
        (folder / "comparisons.csv").write_text("a,b\n" + rows)
    return folder


def run(fedse, fedit, round=3):
    """Outcomes of two methods on tasks m0, m1 (maze) and w0, w1 (wordle); the
    values are per task, in that order; round 1 of fedse is always all-zero."""
    tasks = [("maze", "m0"), ("maze", "m1"), ("wordle", "w0"), ("wordle", "w1")]
    lines = [f"fedse,1,{e},{t},0,1" for e, t in tasks]
    lines += [
        f"fedse,{round},{e},{t},{v},1" for (e, t), v in zip(tasks, fedse, strict=True)
    ]
    lines += [
        f"fedit,{round},{e},{t},{v},1" for (e, t), v in zip(tasks, fedit, strict=True)
    ]
    return lines


@pytest.fixture
def two_runs(tmp_path):
    # run a: fedse solves every task, fedit none; run b: fedse 2 of 4, fedit 2 of 4
    a = report(tmp_path, "a", run([1, 1, 1, 1], [0, 0, 0, 0]), [("fedse", "fedit")])
    b = report(tmp_path, "b", run([1, 0, 1, 0], [1, 0, 1, 0]))
    return [read_report(a), read_report(b)]


def test_a_cell_is_the_mean_over_runs_of_their_final_round(two_runs):
    # Execute
    pooled = cell(two_runs, "fedse", None)
    maze = cell(two_runs, "fedse", "maze")

    # Assert: the final round (3) is read, not round 1; (1.0 + 0.5) / 2 = 0.75
    assert pooled.mean == pytest.approx(0.75) and pooled.runs == 2
    assert maze.mean == pytest.approx(0.75)
    # run a is constant, run b varies: the interval spans from b's worst
    # resample up to a's 1.0
    assert pooled.high == pytest.approx(1.0) and pooled.low < 0.75


def test_runs_constant_within_give_the_interval_of_the_runs_alone(tmp_path):
    # Prepare: within each run every task has the same value (0.25 and 0.75
    # per task, i.e. 1 of 4 and 3 of 4 episodes), so resampling tasks adds
    # nothing; resampling 2 runs gives means 0.25, 0.5, 0.5, 0.75 with
    # probability 1/4, 1/2, 1/4: the 95 % percentile interval is [0.25, 0.75]
    line = "fedse,1,maze,{t},{s},4"
    one = report(tmp_path, "one", [line.format(t=t, s=1) for t in ("m0", "m1")])
    two = report(tmp_path, "two", [line.format(t=t, s=3) for t in ("m0", "m1")])

    # Execute
    estimate = cell([read_report(one), read_report(two)], "fedse", None)

    # Assert
    assert (estimate.mean, estimate.low, estimate.high) == pytest.approx(
        (0.5, 0.25, 0.75)
    )


def test_a_difference_is_paired_within_each_run(two_runs):
    # Execute
    gap = difference(two_runs, "fedse", "fedit")

    # Assert: run a +1.0, run b 0.0 (identical outcomes), mean +0.5
    assert gap.per_run == pytest.approx((1.0, 0.0))
    assert gap.mean == pytest.approx(0.5) and gap.runs == 2


def test_markdown_names_the_runs_the_pairs_and_what_is_left_out(tmp_path, two_runs):
    # Prepare: a third run without fedit
    lonely = report(tmp_path, "c", ["fedse,3,maze,m0,1,1"])

    # Execute
    text = markdown(two_runs)
    partial = markdown([*two_runs, read_report(lonely)])

    # Assert
    assert "| fedse | 75.0 [" in text and "mean over 2 runs" in text
    assert "| fedse − fedit | +50.0 |" in text and "+100.0, +0.0" in text
    assert "1 of 2 runs" in text
    assert "Not in every run, left out: fedit." in partial
    assert "fedse − fedit" not in partial


def test_reports_that_cannot_be_read_are_named(tmp_path, two_runs):
    with pytest.raises(SeedsError, match="no such file"):
        read_report(tmp_path / "absent")
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "outcomes.csv").write_text("method,babyai\nfedse,1\n")
    with pytest.raises(SeedsError, match="not an outcomes file"):
        read_report(odd)
    (odd / "outcomes.csv").write_text(HEADER + "fedse,1,maze,m0,two,1\n")
    with pytest.raises(SeedsError, match="not a number"):
        read_report(odd)
    with pytest.raises(SeedsError, match="'random' is not in"):
        difference(two_runs, "random", "fedit")


def test_cli_prints_the_table_and_every_requested_difference(two_runs, capsys):
    # Execute
    code = main(["seeds", str(two_runs[0].source), str(two_runs[1].source),
                 "--diff", "fedit", "fedse", "--diff", "fedit", "fedit"])  # fmt: skip

    # Assert: both requested pairs, and the pair the first report compared
    out = capsys.readouterr().out
    assert code == 0
    assert "| fedit − fedse | -50.0 |" in out and "| fedse − fedit | +50.0 |" in out
    assert "| fedit − fedit | +0.0 |" in out

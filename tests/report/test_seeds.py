"""Table 1 over seeds (hand-written reports, hand-worked means and ranges)."""

from __future__ import annotations

import pytest

from evoflow.cli import main
from evoflow.report.seeds import SeedsError, combine, differences, markdown, read_report

HEADER = "method,babyai,webshop,maze,avg,episodes\n"


def report(root, name, rows):
    folder = root / name
    folder.mkdir()
    (folder / "table1.csv").write_text(HEADER + "".join(r + "\n" for r in rows))
    return folder


@pytest.fixture
def two_runs(tmp_path):
    seed0 = report(tmp_path, "seed0", ["fedit,40.00,,20.00,32.00,50",
                                       "fedse,20.00,,0.00,12.00,50",
                                       "local,10.00,0.00,0.00,5.00,50"])  # fmt: skip
    seed1 = report(tmp_path, "seed1", ["fedse,50.00,,10.00,34.00,50",
                                       "fedit,30.00,,30.00,30.00,50",
                                       "random,60.00,,10.00,40.00,40"])  # fmt: skip
    return [read_report(seed0), read_report(seed1)]


def test_each_cell_is_the_mean_with_its_range_over_runs(two_runs):
    spreads, missing = combine(two_runs)
    assert list(spreads) == ["fedit", "fedse"]  # in the first report's order
    assert missing == ["local", "random"]
    fedse = spreads["fedse"]
    babyai = fedse["babyai"]
    assert (babyai.mean, babyai.low, babyai.high) == (35, 20, 50)
    assert fedse["avg"].mean == 23 and fedse["avg"].runs == 2
    assert fedse["webshop"] is None  # empty in every run: nothing to show
    assert spreads["fedit"]["maze"].mean == 25


def test_differences_are_per_run_pooled_gaps(two_runs):
    assert differences(two_runs, "fedse", "fedit") == pytest.approx([-20.0, 4.0])
    with pytest.raises(SeedsError, match="no pooled average for 'local'"):
        differences(two_runs, "local", "fedit")


def test_markdown_names_the_runs_the_gaps_and_partial_cells(tmp_path, two_runs):
    text = markdown(two_runs, ("fedse", "fedit"))
    row = "| fedse | 35.0 (20.0-50.0) | – | 5.0 (0.0-10.0) | 23.0 (12.0-34.0) |"
    assert row in text
    assert "Not in every run, left out: local, random." in text
    gap = "fedse - fedit, pooled: -20.0, +4.0 (mean -8.0; ahead in 1 of 2 runs)."
    assert gap in text
    third = read_report(report(tmp_path, "seed2", ["fedit,50.00,10.00,,40.00,50",
                                                   "fedse,40.00,,,20.00,50"]))  # fmt: skip
    table = markdown([*two_runs, third])
    assert "| fedit | 40.0 (30.0-50.0) | 10.0 (10.0-10.0) [1 of 3 runs] |" in table


def test_reports_that_cannot_be_combined_are_named(tmp_path, two_runs):
    with pytest.raises(SeedsError, match="at least two reports"):
        combine(two_runs[:1])
    with pytest.raises(SeedsError, match="no such file"):
        read_report(tmp_path / "absent")
    odd = tmp_path / "odd.csv"
    odd.write_text("method,babyai,avg\nfedse,10.00,10.00\n")
    with pytest.raises(SeedsError, match=r"columns \['babyai', 'avg'\] differ"):
        combine([two_runs[0], read_report(odd)])
    odd.write_text("method,babyai,avg\nfedse,ten,10.00\n")
    with pytest.raises(SeedsError, match="'babyai': 'ten' is not a number"):
        read_report(odd)
    odd.write_text("method,babyai,avg\nfedse,10.00,10.00\nfedse,20.00,20.00\n")
    with pytest.raises(SeedsError, match="methods listed twice: fedse"):
        read_report(odd)
    small = report(tmp_path, "small", ["fedit,40.00,,20.00,32.00,50",
                                       "fedse,20.00,,0.00,12.00,25"])  # fmt: skip
    differ = r"fedse: test episodes differ between runs \(50, 25\)"
    with pytest.raises(SeedsError, match=differ):
        combine([two_runs[0], read_report(small)])
    odd.write_text("name,babyai\nfedse,10\n")
    with pytest.raises(SeedsError, match="not a Table 1 CSV"):
        read_report(odd)


def test_the_command_prints_the_table(tmp_path, two_runs, capsys):
    folders = [str(r.source.parent) for r in two_runs]
    assert main(["seeds", *folders, "--diff", "fedse", "fedit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| Method | BabyAI | WebShop | Maze | Avg |")
    assert "mean -8.0" in out
    assert main(["seeds", folders[0]]) == 2  # one run: a clear error, exit 2

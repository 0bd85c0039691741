"""Table 1 over seeds: each method's mean success and its range across runs.

An embedded run tests 20 tasks per env, so one episode moves a cell by 5 points
and two methods trade places from one seed to the next. ``evoflow seeds
reports/<exp-a> reports/<exp-b> …`` reads each finished report's ``table1.csv``
(``evoflow.report.tables.csv_text``: one row per method, success in % per env and
pooled ``avg``) and prints, per method and column, the mean over the runs with
the lowest and highest value; ``--diff A B`` adds the per-run difference of two
methods' pooled averages, the figure a claim like "A beats B" rests on.
Methods missing from some reports are named and left out; a method tested on a
different number of episodes in one run than in another is an error.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from evoflow.errors import EvoflowError
from evoflow.report.tables import ENV_TITLES, md_row

TABLE = "table1.csv"
POOLED = "avg"
NOT_SCORES = ("method", "episodes")


class SeedsError(EvoflowError):
    """Reports that cannot be put side by side."""


@dataclass(frozen=True)
class Report:
    """One run's Table 1: method -> column -> success (%), None where empty."""

    source: Path
    columns: tuple[str, ...]
    cells: dict[str, dict[str, float | None]]
    episodes: dict[str, str]  # method -> test episodes behind its row


@dataclass(frozen=True)
class Spread:
    mean: float
    low: float
    high: float
    runs: int


def read_report(path: str | Path) -> Report:
    """A report folder (or its ``table1.csv``) as a ``Report``."""
    path = Path(path)
    path = path / TABLE if path.is_dir() else path
    if not path.is_file():
        raise SeedsError(f"{path}: no such file (has the experiment's report run?)")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or "method" not in rows[0] or POOLED not in rows[0]:
        raise SeedsError(f"{path}: not a Table 1 CSV (needs 'method' and '{POOLED}')")
    columns = tuple(c for c in rows[0] if c not in NOT_SCORES)
    methods = [row["method"] for row in rows]
    twice = sorted({m for m in methods if methods.count(m) > 1})
    if twice:
        raise SeedsError(f"{path}: methods listed twice: {', '.join(twice)}")
    cells = {row["method"]: {c: _score(path, row, c) for c in columns} for row in rows}
    episodes = {row["method"]: (row.get("episodes") or "").strip() for row in rows}
    return Report(path, columns, cells, episodes)


def _score(path: Path, row: dict, column: str) -> float | None:
    text = (row.get(column) or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise SeedsError(
            f"{path}: method {row['method']!r}, column {column!r}: "
            f"{text!r} is not a number"
        ) from None


Spreads = dict[str, dict[str, Spread | None]]  # method -> column -> spread


def combine(reports: Sequence[Report]) -> tuple[Spreads, list[str]]:
    """Per method (those in every report) and column, the spread over reports;
    and the methods left out because some report lacks them."""
    if len(reports) < 2:
        raise SeedsError("seeds: give at least two reports")
    first = reports[0]
    for other in reports[1:]:
        if other.columns != first.columns:
            raise SeedsError(
                f"{other.source}: columns {list(other.columns)} differ from "
                f"{first.source}'s {list(first.columns)}"
            )
    shared = [m for m in first.cells if all(m in r.cells for r in reports)]
    for method in shared:
        counts = [r.episodes[method] for r in reports]
        if len(set(counts)) > 1:
            raise SeedsError(
                f"{method}: test episodes differ between runs ({', '.join(counts)}); "
                "only runs of the same test size can be averaged"
            )
    missing = sorted({m for r in reports for m in r.cells} - set(shared))
    spreads = {
        m: {c: _spread([r.cells[m][c] for r in reports]) for c in first.columns}
        for m in shared
    }
    return spreads, missing


def _spread(values: list[float | None]) -> Spread | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return Spread(fmean(present), min(present), max(present), len(present))


def differences(reports: Sequence[Report], a: str, b: str) -> list[float]:
    """Per report, ``a``'s pooled average minus ``b``'s."""
    out = []
    for report in reports:
        for method in (a, b):
            if report.cells.get(method, {}).get(POOLED) is None:
                raise SeedsError(f"{report.source}: no pooled average for {method!r}")
        out.append(report.cells[a][POOLED] - report.cells[b][POOLED])
    return out


def markdown(reports: Sequence[Report], diff: tuple[str, str] | None = None) -> str:
    """The spread table, a line naming the runs, and the differences asked for."""
    spreads, missing = combine(reports)
    columns = reports[0].columns
    titles = [ENV_TITLES.get(c, "Avg" if c == POOLED else c) for c in columns]
    lines = [md_row(["Method", *titles]), md_row(["---"] * (len(columns) + 1))]
    for method, cells in spreads.items():
        row = [_cell(cells[c], len(reports)) for c in columns]
        lines.append(md_row([method, *row]))
    lines.append("")
    lines.append(f"Success (%): mean over {len(reports)} runs (lowest-highest); "
                 + ", ".join(str(r.source) for r in reports) + ".")  # fmt: skip
    if missing:
        lines.append(f"Not in every run, left out: {', '.join(missing)}.")
    if diff:
        values = differences(reports, *diff)
        per_run = ", ".join(f"{v:+.1f}" for v in values)
        lines.append(f"{diff[0]} - {diff[1]}, pooled: {per_run} (mean "
                     f"{fmean(values):+.1f}; ahead in {sum(v > 0 for v in values)} "
                     f"of {len(values)} runs).")  # fmt: skip
    return "\n".join(lines) + "\n"


def _cell(spread: Spread | None, runs: int) -> str:
    if spread is None:
        return "–"
    text = f"{spread.mean:.1f} ({spread.low:.1f}-{spread.high:.1f})"
    return text if spread.runs == runs else f"{text} [{spread.runs} of {runs} runs]"

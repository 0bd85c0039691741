"""Table 1 over runs (seeds): each cell's mean with a 95 % interval.

One embedded run tests about 20 tasks per env, so one episode moves a cell by 5
points and two methods can trade places from one seed to the next. ``evoflow
seeds reports/<exp-a> reports/<exp-b> …`` reads each finished report's
``outcomes.csv`` (per task: successes and episodes of every evaluated method and
round) and gives, for each method's final round and each env and the pooled
average, the mean over runs with an interval from a crossed bootstrap
(resampling runs, and the tasks within envs once for every drawn run, as runs
share their test tasks: ``evoflow.stats.pooled_over_runs``).
Then, for every pair the first report compared (its ``comparisons.csv``) and any
asked for with ``--diff A B``, the mean paired difference over runs (each run's
A and B over their shared tasks) with its crossed interval, a sign-flip test
of each task's share of that mean, a t-test of the runs' own
differences, and the per-run values. It says how many
runs stand behind each number. Methods missing from some reports are named and
left out.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evoflow.errors import EvoflowError
from evoflow.report.evidence import p_text
from evoflow.report.outcomes import Outcomes, OutcomesError, load_outcomes_csv
from evoflow.report.tables import ENV_ORDER, ENV_TITLES, md_row
from evoflow.stats import RunEstimate, paired_over_runs, pooled_over_runs

OUTCOMES = "outcomes.csv"
COMPARISONS = "comparisons.csv"
DRAWS = 10_000


class SeedsError(EvoflowError):
    """Reports that cannot be put side by side."""


@dataclass(frozen=True)
class Report:
    """One run: each method's final-round outcomes, every evaluation's by
    ``method@round``, and the pairs it compared."""

    source: Path
    finals: dict[str, Outcomes]
    pairs: tuple[tuple[str, str], ...]
    evaluations: dict[str, Outcomes] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        """Whether the run holds a method's final evaluation, or ``method@round``'s."""
        return name in self._holding(name)

    def outcomes(self, name: str) -> Outcomes:
        """A method's final evaluation, or ``method@round``'s."""
        if not self.has(name):
            raise SeedsError(f"{name!r} is not in {self.source}")
        return self._holding(name)[name]

    def _holding(self, name: str) -> dict[str, Outcomes]:
        return self.evaluations if "@" in name else self.finals


def read_report(path: str | Path) -> Report:
    """A finished report folder (or its ``outcomes.csv``) as a ``Report``."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    try:
        evaluations = load_outcomes_csv(folder / OUTCOMES)
    except OutcomesError as exc:
        raise SeedsError(str(exc)) from None
    finals: dict[str, tuple[int, Outcomes]] = {}
    for (method, round), outcomes in evaluations.items():
        if method not in finals or round > finals[method][0]:
            finals[method] = (round, outcomes)
    return Report(folder, {m: o for m, (_, o) in finals.items()}, _pairs(folder),
                  {f"{m}@{r}": o for (m, r), o in evaluations.items()})  # fmt: skip


def _pairs(folder: Path) -> tuple[tuple[str, str], ...]:
    path = folder / COMPARISONS
    if not path.is_file():
        return ()
    with path.open(newline="") as handle:
        return tuple((row["a"], row["b"]) for row in csv.DictReader(handle))


def shared_methods(reports: Sequence[Report]) -> tuple[list[str], list[str]]:
    """Methods in every report (first report's order), and those left out."""
    if not reports:
        raise SeedsError("seeds: give at least one report")
    shared = [m for m in reports[0].finals if all(m in r.finals for r in reports)]
    missing = sorted({m for r in reports for m in r.finals} - set(shared))
    return shared, missing


def columns(reports: Sequence[Report]) -> list[str]:
    envs = {env for r in reports for o in r.finals.values() for env in o.envs}
    return [e for e in ENV_ORDER if e in envs] + sorted(envs - set(ENV_ORDER))


def cell(reports: Sequence[Report], method: str, env: str | None) -> RunEstimate | None:
    """One method's pooled success over runs, of one env (None: all envs)."""
    runs = [
        r.finals[method] if env is None else r.finals[method].of(env) for r in reports
    ]
    if not all(run.tasks for run in runs):
        return None
    return pooled_over_runs([run.rates() for run in runs], draws=DRAWS, seed=0)


def difference(reports: Sequence[Report], a: str, b: str) -> RunEstimate:
    """A − B over runs (each run paired over its shared tasks); ``a`` and
    ``b`` name methods (their final evaluations) or ``method@round``."""
    for name in (a, b):
        absent = [str(r.source) for r in reports if not r.has(name)]
        if absent:
            raise SeedsError(f"{name!r} is not in {', '.join(absent)}")
    return paired_over_runs([r.outcomes(a).rates() for r in reports],
                            [r.outcomes(b).rates() for r in reports], draws=DRAWS, seed=0)  # fmt: skip


def markdown(reports: Sequence[Report], diffs: Sequence[tuple[str, str]] = ()) -> str:
    """The table over runs, a line naming the runs, and the paired differences
    (the first report's compared pairs, then ``diffs``)."""
    methods, missing = shared_methods(reports)
    envs = columns(reports)
    titles = [ENV_TITLES.get(e, e) for e in envs] + ["Avg"]
    lines = [md_row(["Method", *titles]), md_row(["---"] * (len(envs) + 2))]
    for method in methods:
        cells = [_cell_text(cell(reports, method, env)) for env in [*envs, None]]
        lines.append(md_row([method, *cells]))
    lines += ["", f"Success (%): mean over {len(reports)} runs [95 % interval, "
              "crossed bootstrap over runs and tasks within envs]; "
              + ", ".join(str(r.source) for r in reports) + "."]  # fmt: skip
    if missing:
        lines.append(f"Not in every run, left out: {', '.join(missing)}.")
    pairs = [p for p in reports[0].pairs if p[0] in methods and p[1] in methods]
    pairs = list(dict.fromkeys([*pairs, *(tuple(d) for d in diffs)]))
    if pairs:
        lines += ["", *_differences(reports, pairs)]
    return "\n".join(lines) + "\n"


def _differences(reports: Sequence[Report], pairs) -> list[str]:
    header = ["A − B", "Mean (points)", "95 % interval", "p (sign flips over tasks)",
              "p (t over runs)", "Per run", "A ahead in"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for a, b in pairs:
        d = difference(reports, a, b)
        per_run = ", ".join(f"{100 * v:+.1f}" for v in d.per_run)
        ahead = f"{sum(v > 0 for v in d.per_run)} of {d.runs} runs"
        lines.append(md_row([f"{a} − {b}", f"{100 * d.mean:+.1f}",
                             f"[{100 * d.low:+.1f}, {100 * d.high:+.1f}]",
                             p_text(d.p_value), p_text(d.p_runs), per_run,
                             ahead]))  # fmt: skip
    return lines


def _cell_text(estimate: RunEstimate | None) -> str:
    if estimate is None:
        return "–"
    return f"{100 * estimate.mean:.1f} [{100 * estimate.low:.1f}, {100 * estimate.high:.1f}]"

"""The phenomena report: every study's claims, measured over its fresh seeds.

For each claim of each study config (``evoflow.study``) the seeds' reports are
pooled (``evoflow.report.seeds.difference``: each seed's paired difference of
A over B on its shared test tasks, a crossed bootstrap over seeds and tasks
within envs, and two tests: a sign-flip test of each task's share of the
mean difference, and a t-test of the seeds' differences). The verdict
follows the project's rule: a claim **holds** when the 95 % interval excludes
zero in the paper's direction and both p < 0.05, is **reversed** when it
excludes zero the other way with both p < 0.05, and is otherwise **not
resolved at this scale** — the t interval over seeds says how large an effect
the study could have missed (with a handful of seeds the bootstrap cannot
reach past the seeds' own range, so it is the narrower of the two). Both
tests must agree because each holds one source of chance fixed: the test over
tasks treats every seed's training chain as given (one chain's luck, shared by
all its tasks, would pass it), the test over seeds asks whether a new chain
would show the difference (and needs two seeds or more). Helmsman's study has
no paper claim (its agents do not run): its section lists each task's
specialised method against FedAvg over the partition seeds.
``evoflow phenomena config/study/*.yaml --out reports/phenomena.md`` prints
the report and writes it there; with several ``--reports`` folders (the kept
reports of studies run at different times, or of one study's seeds run over
several sittings) each seed is read from the first folder that holds it, so
list one kept version of a study, not two.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evoflow.config import load_config
from evoflow.report.evidence import ALPHA, CHANCE, p_text, span_text
from evoflow.report.seeds import SeedsError, difference, read_report
from evoflow.report.tables import md_row
from evoflow.stats import RunEstimate, seed_mean
from evoflow.study import Claim, Study, study_of, wall_seconds


@dataclass(frozen=True)
class Phenomenon:
    """One claim of one study, measured."""

    study: str
    claim: Claim
    estimate: RunEstimate | None  # None: no seed has finished
    seeds: int
    tasks: int  # shared test tasks behind the difference, summed over seeds
    wall_seconds: float
    timed: int  # seeds read whose wall time a record holds
    missing: tuple[int, ...]  # seeds whose report is not there yet
    problem: str = ""  # why no estimate could be made from the finished seeds


def verdict(claim: Claim, estimate: RunEstimate | None) -> str:
    """ "holds", "reversed" or "not resolved at this scale" (see the module)."""
    if estimate is None:
        return "not run"
    sign = 1 if claim.direction == "greater" else -1
    low, high = sorted((sign * estimate.low, sign * estimate.high))
    agreed = all(p is not None and p < ALPHA
                 for p in (estimate.p_value, estimate.p_runs))  # fmt: skip
    if agreed and low > 0:
        return "holds"
    if agreed and high < 0:
        return "reversed"
    return "not resolved at this scale"


def measure(
    study: Study, reports: str | Path | Sequence[str | Path] = "reports"
) -> list[Phenomenon]:
    """Every claim of ``study`` over the seeds whose reports exist, each seed
    read from the first of the ``reports`` folders that holds it (a study run
    over several sittings, each kept in a folder of its own), its wall time from
    that folder's study record."""
    folders = [reports] if isinstance(reports, str | Path) else list(reports)
    found, missing, walls = [], [], {}
    for seed in study.seeds:
        read = _first_report(study, seed, folders)
        if read is None:
            missing.append(seed)
            continue
        found.append(read[0])
        if seed in (timed := wall_seconds(study, read[1])):
            walls[seed] = timed[seed]
    out = []
    for claim in study.claims:
        estimate, shared, problem = None, 0, ""
        try:
            if found:
                estimate = difference(found, claim.a, claim.b)
                shared = sum(len(set(r.outcomes(claim.a).tasks)
                                 & set(r.outcomes(claim.b).tasks)) for r in found)  # fmt: skip
        except (SeedsError, ValueError) as error:  # a method absent, no shared task
            problem = str(error)
        out.append(Phenomenon(study.experiment, claim, estimate, len(found), shared,
                              sum(walls.values()), len(walls), tuple(missing),
                              problem))  # fmt: skip
    return out


def _first_report(study: Study, seed: int, folders: Sequence[str | Path]):
    """(report, folder) of ``seed`` from the first folder whose copy reads
    (an interrupted sitting can leave an empty one), or None."""
    for folder in folders:
        try:
            return read_report(study.report(seed, folder)), Path(folder)
        except SeedsError:
            continue
    return None


def markdown(phenomena: Sequence[Phenomenon]) -> str:
    header = ["Study", "Paper's claim", "A − B (points)", "95 % interval (bootstrap)",
              "95 % interval (t, seeds)", "p (tasks)", "p (seeds)", "Seeds", "Tasks",
              "Wall time", "Verdict"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for p in phenomena:
        e = p.estimate
        cells = ["–"] * 5 if e is None else [
            f"{100 * e.mean:+.1f}", f"[{100 * e.low:+.1f}, {100 * e.high:+.1f}]",
            _t_interval(e), p_text(e.p_value), p_text(e.p_runs)]  # fmt: skip
        seeds = f"{p.seeds}" + (f" ({len(p.missing)} missing)" if p.missing else "")
        wall = f"{p.wall_seconds / 60:.0f} min" if p.wall_seconds else "–"
        if p.wall_seconds and p.timed < p.seeds:
            wall += f" ({p.timed} of {p.seeds} seeds timed)"
        lines.append(md_row([p.study, f"{p.claim.claim} ({p.claim.a} − {p.claim.b})",
                             *cells, seeds, str(p.tasks), wall,
                             p.problem or verdict(p.claim, e)]))  # fmt: skip
    note = ("\nEach seed's difference is paired over its shared test tasks; the "
            "interval is a crossed bootstrap (seeds, and tasks within envs shared by "
            "every drawn seed), the t interval Student's, over the seeds' own "
            "differences; p (tasks) a sign-flip test of each task's share of the "
            "mean difference, p (seeds) a t-test of the seeds' differences. A "
            "claim holds only when the interval excludes zero in the paper's "
            "direction and both p < 0.05; each claim is tested on its own, with "
            "no correction for the number of claims.\n")  # fmt: skip
    return "\n".join(lines) + "\n" + note


def _t_interval(estimate: RunEstimate) -> str:
    """The seeds' t interval; "–" with one seed, or with seeds that all gave the
    same non-zero difference (no spread, no p: ``seed_mean`` keeps a zero-width
    interval there, which a table would read as certainty)."""
    t = seed_mean(estimate.per_run)
    if t.low is None or t.p_value is None:
        return "–"
    return span_text(100 * t.low, 100 * t.high)


def helmsman_section(experiment: str, seeds: Sequence[int],
                     reports: str | Path = "reports") -> str:  # fmt: skip
    """Helmsman's study (``config/study/helmsman.yaml``): not a paper's claim
    (the agents do not run) but AgentFL-Bench's baselines over partition seeds,
    read from its report's ``helmsman_comparisons.csv``
    (``evoflow.report.helmsman.comparisons_csv``)."""
    path = Path(reports) / experiment / "helmsman_comparisons.csv"
    title = f"## {experiment}: AgentFL-Bench's baselines against FedAvg"
    if not path.is_file():
        return (f"{title}\n\nNo {path}: run the study (or, for a report older than "
                "this file, its helm_report rule again).\n")  # fmt: skip
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or "verdict" not in rows[0]:
        return f"{title}\n\n{path} holds no comparison with a verdict.\n"
    header = ["Task", "Problem", "A − FedAvg", "Points", "95 % interval (t, seeds)",
              "p (seeds)", "Seeds", "Verdict"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for r in (r for r in rows if r["column"] == "specialised"):
        # no interval with one seed, nor where every seed gave the same
        # non-zero difference (zero width, no test: see _t_interval)
        flat = not r["p"] and float(r["mean"]) != 0.0
        span = (
            "–"
            if not r["low"] or flat
            else span_text(float(r["low"]), float(r["high"]))
        )
        p = p_text(float(r["p"])) if r["p"] else "–"
        lines.append(md_row([r["task"], r["problem"], r["method"],
                             f"{float(r['mean']):+.1f}", span, p,
                             f"{r['seeds']} of {len(seeds)}", r["verdict"]]))  # fmt: skip
    return "\n\n".join([title, "\n".join(lines), _fedprox_summary(rows)]) + "\n"


def _fedprox_summary(rows: list[dict]) -> str:
    prox = [r for r in rows if r["column"] == "fedprox"]
    counts = Counter(r["verdict"] for r in prox)
    largest = max((abs(float(r["mean"])) for r in prox), default=0.0)
    tally = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    return (
        f"FedProx − FedAvg on {len(prox)} task{'s' * (len(prox) != 1)}: {tally}; the "
        f"largest mean difference {largest:.2f} points. Each row is one task's "
        "t-test over the partition seeds both finished: ahead or behind only where "
        f"p < 0.05 (its 95 % interval then excludes zero); {CHANCE}"
    )


def holding(experiments: Sequence[str], folders: Sequence[str | Path]) -> Path:
    """The first of ``folders`` that holds a folder named in ``experiments``
    (Helmsman's study's report); the first folder if none does, so that the
    study reads as not run there."""
    for folder in folders:
        if any((Path(folder) / name).is_dir() for name in experiments):
            return Path(folder)
    return Path(folders[0])


def phenomena_report(
    configs: Sequence[str | Path],
    reports: str | Path | Sequence[str | Path] = "reports",
) -> str:
    """The report of every study config in ``configs`` (Helmsman's, which has
    no claims, as a section of its own), each seed of a study (Helmsman's
    study: the study) read from the first of the ``reports`` folders that
    holds it."""
    folders = [reports] if isinstance(reports, str | Path) else list(reports)
    rows, sections = [], []
    for path in configs:
        config = load_config(path)
        helmsman = config.get("helmsman") or {}
        if helmsman.get("study"):
            seeds = helmsman["bench"]["seeds"]
            folder = holding([config["experiment"]], folders)
            sections.append(helmsman_section(config["experiment"], seeds, folder))
            continue
        rows += measure(study_of(config, str(path)), folders)
    return "\n".join(([markdown(rows)] if rows else []) + sections)

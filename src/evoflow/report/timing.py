"""Where a run's time went: the jobs' own timings, summed per rule.

Every model-running rule has a Snakemake ``benchmark:`` file under
``logs/<experiment>/bench/<rule>/…`` (a TSV whose ``s`` column is the job's wall
seconds and ``max_rss`` its peak memory in MB). The table sums them per rule and
gives each rule's share of the summed job time; on ``--cores N`` the run's wall
time is about that sum over N. A job started warm (``evoflow.warmstart``) ran in
a process its benchmark does not see: its peak memory comes from the note its
job process left in ``warm_jobs.jsonl`` (the latest note per job).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from evoflow.errors import EvoflowError
from evoflow.warmstart import LEDGER


def rule_times(bench: str | Path) -> dict[str, dict[str, float]]:
    """Per rule: ``jobs``, summed ``seconds`` and the largest ``max_rss_mb``."""
    bench = Path(bench)
    files = sorted(bench.glob("*/**/*.tsv"))
    if not files:
        raise EvoflowError(f"{bench}: no benchmark files (has the workflow run?)")
    rules: dict[str, dict[str, float]] = {}
    for path in files:
        with path.open() as handle:
            row = next(csv.DictReader(handle, delimiter="\t"), None)
        if row is None or "s" not in row:
            raise EvoflowError(f"{path}: not a Snakemake benchmark file")
        rule = path.relative_to(bench).parts[0]
        entry = rules.setdefault(rule, {"jobs": 0, "seconds": 0.0, "max_rss_mb": 0.0})
        entry["jobs"] += 1
        entry["seconds"] += float(row["s"])
        rss = row.get("max_rss", "NA")
        if rss not in ("NA", "-", ""):
            entry["max_rss_mb"] = max(entry["max_rss_mb"], float(rss))
    for rule, rss in _warm_peaks(bench / LEDGER).items():
        if rule in rules:
            rules[rule]["max_rss_mb"] = max(rules[rule]["max_rss_mb"], rss)
    return rules


def _warm_peaks(ledger: Path) -> dict[str, float]:
    """Per rule, the largest peak RSS of warm-started jobs (each job's latest note)."""
    if not ledger.is_file():
        return {}
    latest: dict[tuple, dict] = {}
    for number, line in enumerate(ledger.read_text().splitlines(), start=1):
        try:
            note = json.loads(line)
            latest[(note["rule"], note["output"])] = note
        except (ValueError, KeyError, TypeError) as exc:
            raise EvoflowError(f"{ledger}:{number}: not a job note: {exc}") from None
    peaks: dict[str, float] = {}
    for (rule, _), note in latest.items():
        peaks[rule] = max(peaks.get(rule, 0.0), float(note["max_rss"]))
    return peaks


def timing_markdown(rules: dict[str, dict[str, float]]) -> str:
    """Markdown table of ``rule_times``, the costliest rule first, with a total."""
    total = sum(r["seconds"] for r in rules.values()) or 1.0
    lines = ["| Rule | Jobs | Job time (s) | Share (%) | Peak RSS (MB) |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, r in sorted(rules.items(), key=lambda kv: -kv[1]["seconds"]):
        lines.append(f"| {name} | {r['jobs']:.0f} | {r['seconds']:.0f} | "
                     f"{100 * r['seconds'] / total:.0f} | {r['max_rss_mb']:.0f} |")  # fmt: skip
    jobs = sum(r["jobs"] for r in rules.values())
    lines.append(f"| all | {jobs:.0f} | {total:.0f} | 100 | |")
    return "\n".join(lines) + "\n"

"""Paired comparisons: what a difference between two rows of Table 1 rests on.

Two rows side by side are not a comparison. Each pair of methods named here is
compared over the test tasks both played (``evoflow.stats.paired_difference``):
the pooled difference in points, a 95 % interval from a bootstrap that
resamples tasks within each env, and a p-value (exact McNemar where both are
single episodes per task; a sign-flip permutation test against the random
reference, whose per-task success is a mean over seeds). The pairs:

- each method against the kinds its ``Kind.versus`` names (Fed-SE against
  FedIT and against FedIT at its own training budget, an ablation against
  Fed-SE, AgentEvol against behaviour cloning, ScalingInter-RL against the fixed
  horizon);
- a method that starts from another's adapter (RL's ``init``) against that
  start, unless the start names its kind (AgentEvol, whose base agent is
  AgentTraj-SFT's), and never a matched control against its round 0's source;
- every trained method against Pre-Trained and against Random (valid
  actions), on the envs the latter plays.

A claim "holds" only where the interval excludes zero in its direction;
``verdict`` says so in words, and asks the test to agree (p < 0.05): with a
handful of tasks a percentile bootstrap can exclude zero where an exact test
cannot.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass

from evoflow.methods import Method
from evoflow.report.outcomes import Outcomes
from evoflow.report.tables import md_row
from evoflow.stats import PairedDifference, paired_difference

LEVEL = 0.95
DRAWS = 10_000
REFERENCES = ("pretrained", "random")  # every trained method is compared with these


@dataclass(frozen=True)
class Comparison:
    """Method ``a`` minus method ``b`` over their shared test tasks."""

    a: str
    b: str
    result: PairedDifference


def planned_pairs(methods: Mapping[str, Method]) -> list[tuple[str, str]]:
    """The (A, B) pairs a report compares, in table order, each once."""
    by_kind: dict[str, list[str]] = {}
    for name, method in methods.items():
        by_kind.setdefault(method.kind.name, []).append(name)
    pairs: list[tuple[str, str]] = []
    for name, method in methods.items():
        for kind in method.kind.versus:
            pairs += [(name, other) for other in by_kind.get(kind, []) if other != name]
        start = method.options.get("init")  # the adapter it starts from
        if (start in methods and not method.kind.matched
                and method.kind.name not in methods[start].kind.versus):  # fmt: skip
            pairs.append((name, start))  # unless the start plans it the other way
    for name, method in methods.items():
        if method.kind.trains:
            pairs += [
                (name, ref) for kind in REFERENCES for ref in by_kind.get(kind, [])
            ]
    return list(dict.fromkeys(pairs))


def compare(
    outcomes: Mapping[str, Outcomes],
    pairs: list[tuple[str, str]],
    seed: int = 0,
) -> list[Comparison]:
    """Every pair whose methods share at least one test task."""
    found = []
    for a, b in pairs:
        left, right = outcomes[a].rates(), outcomes[b].rates()
        if not set(left) & set(right):
            continue
        result = paired_difference(left, right, level=LEVEL, draws=DRAWS, seed=seed)
        found.append(Comparison(a, b, result))
    return found


ALPHA = 0.05


def verdict(result: PairedDifference) -> str:
    """``A ahead`` or ``B ahead`` (the interval excludes zero on that side
    and p < 0.05), else ``not resolved``."""
    if result.p_value < ALPHA and result.low > 0:
        return "A ahead"
    if result.p_value < ALPHA and result.high < 0:
        return "B ahead"
    return "not resolved"


def points(value: float) -> str:
    return f"{100 * value:+.1f}"


def interval(result: PairedDifference) -> str:
    return span_text(100 * result.low, 100 * result.high)


def span_text(low: float | None, high: float | None, digits: int = 1) -> str:
    """An interval for a table, signed, ``digits`` decimals; "–" for none."""
    if low is None or high is None:
        return "–"
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]"


CHANCE = "of rows with no true difference, about one in twenty passes by chance."


def p_text(p: float | None) -> str:
    """A p-value for a table: three decimals, "< 0.001" below that, "–" for none."""
    if p is None:
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def discordant(result: PairedDifference) -> str:
    if result.a_only is None:
        return "–"
    return f"{result.a_only} / {result.b_only}"


def comparisons_markdown(
    comparisons: list[Comparison], titles: Mapping[str, str]
) -> str:
    """The comparison table: A − B in points, its interval, p, discordant
    tasks (A only / B only), tasks and envs, and what the interval says."""
    header = ["A − B", "Difference (points)", "95 % interval", "p", "Test",
              "A only / B only", "Tasks", "Verdict"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for c in comparisons:
        r = c.result
        lines.append(md_row([f"{titles[c.a]} − {titles[c.b]}", points(r.difference),
                             interval(r), p_text(r.p_value), r.test, discordant(r),
                             f"{r.tasks} ({len(r.envs)} envs)", verdict(r)]))  # fmt: skip
    return "\n".join(lines) + "\n"


def comparisons_csv(comparisons: list[Comparison]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["a", "b", "difference", "low", "high", "p_value", "test",
                     "a_only", "b_only", "tasks", "envs", "verdict"])  # fmt: skip
    for c in comparisons:
        r = c.result
        writer.writerow([c.a, c.b, f"{r.difference:.4f}", f"{r.low:.4f}", f"{r.high:.4f}",
                         f"{r.p_value:.4g}", r.test, "" if r.a_only is None else r.a_only,
                         "" if r.b_only is None else r.b_only, r.tasks, " ".join(r.envs),
                         verdict(r)])  # fmt: skip
    return out.getvalue()

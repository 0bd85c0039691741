"""The companion of Table 1: how each method behaves, beside how often it wins.

Format learning (valid actions) and policy learning (success) move apart on a
small model: a method can stop writing unusable replies long before it solves
tasks. For every method's final evaluation this table gives the invalid-action
rate, the mean turns per episode and the share of episodes that failed stuck
repeating one action (``evaluate.metrics.stuck_repeating``: a trained agent can
collapse into loops; random valid actions repeat by chance), pooled over every
test episode of every env, and — for self-evolving methods — the successes its
clients' exploration found, round by round and in all (``explored_successes``
of the round buffers):
``0 → 3 → 7 (10 / 96)`` — the loop closing shows as a rising sequence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from evoflow.report.tables import Row, cell, md_row, pct


def explored(buffer_files: Sequence[str | Path]) -> tuple[int, int]:
    """(successes, episodes) explored, summed over round buffers (``buffer.json``)."""
    successes = episodes = 0
    for path in buffer_files:
        info = json.loads(Path(path).read_text())["info"]
        successes += int(info["explored_successes"])
        episodes += int(info["explored_episodes"])
    return successes, episodes


def explored_by_round(buffer_files: Sequence[str | Path]) -> list[tuple[int, int]]:
    """(successes, episodes) explored in each round, in round order (the round
    is read from the buffer's path, ``…/round=<n>/…``)."""
    rounds: dict[int, list[str | Path]] = {}
    for path in buffer_files:
        found = re.search(r"round=(\d+)", str(path))
        if found is None:
            raise ValueError(f"{path}: a round buffer's path names its round=<n>")
        rounds.setdefault(int(found.group(1)), []).append(path)
    return [explored(rounds[r]) for r in sorted(rounds)]


def behaviour_markdown(
    rows: Sequence[Row], exploration: Mapping[str, list[tuple[int, int]]]
) -> str:
    """Markdown table: invalid-action rate, mean turns, stuck episodes,
    exploration successes (``exploration``: per method, (successes, episodes)
    of each round)."""
    header = ["Method", "Invalid actions (%)", "Mean turns", "Stuck repeating (%)",
              "Exploration successes"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for row in rows:
        found_text = _found(exploration.get(row.method))
        lines.append(md_row([row.title, pct(row.invalid_pct), pct(row.mean_turns),
                             pct(row.stuck_pct), found_text]))  # fmt: skip
    return "\n".join(lines) + "\n"


def _found(per_round: list[tuple[int, int]] | None) -> str:
    """``1 → 4 (5 / 6)``: successes per round, then in all (one round: ``5 / 6``)."""
    if not per_round:
        return "–"
    wins, played = sum(s for s, _ in per_round), sum(e for _, e in per_round)
    if len(per_round) == 1:
        return f"{wins} / {played}"
    return " → ".join(str(s) for s, _ in per_round) + f" ({wins} / {played})"


def rounds_markdown(curves: Mapping[str, Mapping[int, Row]]) -> str:
    """Markdown table: a federated method's pooled success (with its count and
    interval, where the row was read from episodes) at each evaluated round
    (``curves``: per method, its row at each round), one method a line."""
    rounds = sorted({r for series in curves.values() for r in series})
    lines = [md_row(["Method", *(f"Round {r}" for r in rounds)]),
             md_row(["---"] * (len(rounds) + 1))]  # fmt: skip
    for series in curves.values():
        title = next(iter(series.values())).title
        cells = [cell(series[r], None) if r in series else "–" for r in rounds]
        lines.append(md_row([title, *cells]))
    return "\n".join(lines) + "\n"

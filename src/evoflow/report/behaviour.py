"""The companion of Table 1: how each method behaves, beside how often it wins.

Format learning (valid actions) and policy learning (success) move apart on a
small model: a method can stop writing unusable replies long before it solves
tasks. For every method's final evaluation this table gives the invalid-action
rate and the mean turns per episode, pooled over every test episode of every
env, and — for self-evolving methods — the successes its clients' exploration
found over all rounds (``explored_successes`` of the round buffers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from evoflow.report.tables import Row, md_row, pct


def explored(buffer_files: Sequence[str | Path]) -> tuple[int, int]:
    """(successes, episodes) explored, summed over round buffers (``buffer.json``)."""
    successes = episodes = 0
    for path in buffer_files:
        info = json.loads(Path(path).read_text())["info"]
        successes += int(info["explored_successes"])
        episodes += int(info["explored_episodes"])
    return successes, episodes


def behaviour_markdown(
    rows: Sequence[Row], exploration: Mapping[str, tuple[int, int]]
) -> str:
    """Markdown table: invalid-action rate, mean turns, exploration successes."""
    header = ["Method", "Invalid actions (%)", "Mean turns", "Exploration successes"]
    lines = [md_row(header), md_row(["---"] * len(header))]
    for row in rows:
        found = exploration.get(row.method)
        found_text = f"{found[0]} / {found[1]}" if found else "–"
        lines.append(
            md_row([row.title, pct(row.invalid_pct), pct(row.mean_turns), found_text])
        )
    return "\n".join(lines) + "\n"

"""Test-time scaling figures (AgentGym-RL Figures 8 and 9) from cached metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from evoflow.report.figures import _figure, _save


def turns_curve(files: Mapping[int, Sequence[str | Path]]) -> dict[int, float]:
    """Pooled success (%) at each max-turn cap, from the envs' metrics files."""
    curve = {}
    for turns, paths in sorted(files.items()):
        metrics = [json.loads(Path(p).read_text()) for p in paths]
        wins = sum(m["success_rate"] * m["episodes"] for m in metrics)
        curve[turns] = 100 * wins / max(1, sum(m["episodes"] for m in metrics))
    return curve


def passk_curve(paths: Sequence[str | Path]) -> dict[int, float]:
    """pass@k (%) averaged over the envs' tasks, weighted by task count."""
    metrics = [json.loads(Path(p).read_text()) for p in paths]
    tasks = sum(m["tasks"] for m in metrics)
    ks = sorted({int(k) for m in metrics for k in m["pass_at_k"]})
    return {k: 100 * sum(m["pass_at_k"][str(k)] * m["tasks"] for m in metrics) / tasks
            for k in ks}  # fmt: skip


def scaling_figure(curves: Mapping[str, Mapping[int, float]], xlabel: str,
                   path: str | Path, log2: bool = False) -> None:  # fmt: skip
    figure = _figure(5, 3.5)
    axes = figure.add_subplot()
    for title, curve in curves.items():
        axes.plot(list(curve), list(curve.values()), marker="o", label=title)
    if log2:
        axes.set_xscale("log", base=2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("success (%)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    _save(figure, path)

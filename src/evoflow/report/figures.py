"""Figures from cached results (matplotlib's object API; no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evoflow.atomic import atomic_path

Series = Mapping[int, Mapping[str, float]]  # round -> {env or "avg": success %}


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", bbox_inches="tight")


def success_curves(
    curves: Mapping[str, Series],
    baselines: Mapping[str, Mapping[str, float]],
    panels: Sequence[str],
    titles: Mapping[str, str],
    path: str | Path,
    ylabel: str = "success rate (%)",
    xlabel: str = "round",
) -> None:
    """Success vs round, one panel per env plus the pooled average.

    ``curves`` are per-round series of federated (or iterative) methods;
    ``baselines`` are static methods (one value per panel), drawn as dashed
    horizontal lines.
    """
    from matplotlib.ticker import MaxNLocator

    figure = _figure(3.2 * len(panels), 3.0)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for name, series in curves.items():
            rounds = sorted(series)
            ax.plot(rounds, [series[r].get(panel, float("nan")) for r in rounds], marker="o",
                    label=titles.get(name, name))  # fmt: skip
        for name, values in baselines.items():
            if panel in values:
                ax.axhline(values[panel], linestyle="--", linewidth=1, label=titles.get(name, name),
                           color=f"C{len(curves) + list(baselines).index(name)}")  # fmt: skip
        ax.set_title(titles.get(panel, panel))
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(
        handles,
        labels,
        loc="upper center",
        ncol=min(len(labels), 6),
        bbox_to_anchor=(0.5, 1.12),
    )
    _save(figure, path)


def ablation_bars(values: Mapping[str, float], path: str | Path) -> None:
    """Pooled final success of Fed-SE and its ablations."""
    figure = _figure(1.4 * len(values) + 1.5, 3.2)
    ax = figure.subplots()
    names = list(values)
    bars = ax.bar(
        range(len(names)),
        [values[n] for n in names],
        color=[f"C{i}" for i in range(len(names))],
    )
    ax.bar_label(bars, fmt="%.1f")
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel("avg success rate (%)")
    ax.set_ylim(0, max([*values.values(), 1.0]) * 1.2)
    ax.grid(axis="y", alpha=0.3)
    _save(figure, path)


def rank_tradeoff(points: Sequence[tuple[int, float, float]], path: str | Path) -> None:
    """LoRA rank: communication per client and round (MiB, fp32) vs success."""
    figure = _figure(4.5, 3.2)
    ax = figure.subplots()
    points = sorted(points)
    ax.plot([p[1] for p in points], [p[2] for p in points], marker="o")
    for rank, mib, success in points:
        ax.annotate(
            f"r={rank}", (mib, success), textcoords="offset points", xytext=(4, 6)
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("upload per client and round (MiB, fp32)")
    ax.set_ylabel("avg success rate (%)")
    ax.grid(alpha=0.3)
    _save(figure, path)


def training_curves(
    steps: Mapping[str, Sequence[Mapping]], path: str | Path, window: int = 3
) -> None:
    """RL training by step, one line per method: success of the step's rollouts
    (faint) and its running mean over ``window`` steps, and mean turns played."""
    figure = _figure(9.0, 3.2)
    left, right = figure.subplots(1, 2)
    for i, (name, rows) in enumerate(steps.items()):
        x = [r["step"] for r in rows]
        success = [100.0 * r["success"] for r in rows]
        smooth = [sum(success[max(0, j - window + 1) : j + 1]) / len(success[max(0, j - window + 1) : j + 1])
                  for j in range(len(success))]  # fmt: skip
        left.plot(x, success, color=f"C{i}", alpha=0.3, linewidth=1)
        left.plot(x, smooth, color=f"C{i}", label=name)
        right.plot(x, [r["turns"] for r in rows], color=f"C{i}", marker=".", label=name)
    left.set_ylabel(f"training success (%), mean of {window} steps")
    right.set_ylabel("mean turns per episode")
    for ax in (left, right):
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    left.legend(fontsize="small")
    _save(figure, path)


def sage_dynamics(series: Mapping[str, Mapping[str, Mapping[int, float]]],
                  path: str | Path) -> None:  # fmt: skip
    """SAGE's Figure 3: pool size and validation accuracy by step, per method
    (``series``: title -> {"pool": step -> size, "accuracy": step -> %})."""
    figure = _figure(9, 3.4)
    pool_ax, acc_ax = figure.subplots(1, 2)
    for title, s in series.items():
        pool_ax.plot(list(s["pool"]), list(s["pool"].values()), marker="o", label=title)
        acc_ax.plot(list(s["accuracy"]), list(s["accuracy"].values()), marker="o",
                    label=title)  # fmt: skip
    pool_ax.set(xlabel="step", ylabel="questions in the pool", title="pool size")
    acc_ax.set(xlabel="step", ylabel="Solver pass@1 (%)", title="validation accuracy")
    acc_ax.legend(fontsize=7)
    _save(figure, path)

"""Figures from cached results (matplotlib's object API; no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evoflow.atomic import atomic_path
from evoflow.report.colours import method_colours

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# A value is a success rate in %, or (rate, low, high) with its 95 % interval.
Value = float | tuple[float, float, float]
Series = Mapping[int, Mapping[str, Value]]  # round -> {env or "avg": value}


def _split(value: Value | None) -> tuple[float, float, float]:
    """(rate, low, high) of a value; a bare rate is its own bounds."""
    if value is None:
        return float("nan"), float("nan"), float("nan")
    if isinstance(value, tuple):
        return value
    return value, value, value


def _figure(width: float, height: float):
    """A figure whose constrained layout keeps an ``outside`` legend off the axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=120, layout="constrained")
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
) -> Figure:
    """Success vs round, one panel per env plus the pooled average.

    ``curves`` are per-round series of federated (or iterative) methods, drawn
    with error bars where a value carries its interval; ``baselines`` are
    static methods (one value per panel), drawn as dashed horizontal lines in a
    faint band of their interval. Each method keeps its colour in every figure
    (``evoflow.report.colours``; the keys are method names). The legend
    sits above the panels, outside them, in as many rows as it needs. Returns
    the figure (saved to ``path``).
    """
    from matplotlib.ticker import MaxNLocator

    names = [*curves, *baselines]
    colours = method_colours(names)
    figure = _figure(3.2 * len(panels), 3.0 + 0.25 * (len(names) // 6))
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        for name, series in curves.items():
            rounds = sorted(series)
            rate, low, high = zip(
                *(_split(series[r].get(panel)) for r in rounds), strict=True
            )
            errors = [[r - lo for r, lo in zip(rate, low, strict=True)],
                      [hi - r for r, hi in zip(rate, high, strict=True)]]  # fmt: skip
            ax.errorbar(rounds, rate, yerr=errors, marker="o", capsize=2,
                        color=colours[name], label=titles.get(name, name))  # fmt: skip
        for name, values in baselines.items():
            if panel in values:
                color = colours[name]
                rate, low, high = _split(values[panel])
                ax.axhline(rate, linestyle="--", linewidth=1, label=titles.get(name, name),
                           color=color)  # fmt: skip
                if high > low:
                    ax.axhspan(low, high, color=color, alpha=0.08, linewidth=0)
        ax.set_title(titles.get(panel, panel))
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 6))
    _save(figure, path)
    return figure


def ablation_bars(
    values: Mapping[str, Value],
    path: str | Path,
    methods: Mapping[str, str] | None = None,
) -> None:
    """Pooled final success of Fed-SE and its ablations, with 95 % error bars
    where a value carries its interval (``methods``: bar label -> its method's
    name, whose colour the bar takes; default: the label)."""
    figure = _figure(1.4 * len(values) + 1.5, 3.2)
    ax = figure.subplots()
    names = list(values)
    method = {name: (methods or {}).get(name, name) for name in names}
    colour = method_colours(list(dict.fromkeys(method.values())))
    colours = {name: colour[method[name]] for name in names}
    rate, low, high = zip(*(_split(values[n]) for n in names), strict=True)
    bars = ax.bar(
        range(len(names)),
        rate,
        yerr=[[r - lo for r, lo in zip(rate, low, strict=True)],
              [hi - r for r, hi in zip(rate, high, strict=True)]],
        capsize=3,
        color=[colours[n] for n in names],
    )  # fmt: skip
    ax.bar_label(bars, fmt="%.1f", label_type="center")
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel("avg success rate (%)")
    ax.set_ylim(0, max([*high, 1.0]) * 1.15)
    ax.grid(axis="y", alpha=0.3)
    _save(figure, path)
    return figure


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
    return figure


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
    return figure


def sage_dynamics(series: Mapping[str, Mapping[str, Mapping[int, float]]],
                  path: str | Path) -> None:  # fmt: skip
    """SAGE's Figure 3: pool size and held-out accuracy by step, per method
    (``series``: title -> {"pool": step -> size, "accuracy": step -> %})."""
    figure = _figure(9, 3.4)
    pool_ax, acc_ax = figure.subplots(1, 2)
    for title, s in series.items():
        pool_ax.plot(list(s["pool"]), list(s["pool"].values()), marker="o", label=title)
        acc_ax.plot(list(s["accuracy"]), list(s["accuracy"].values()), marker="o",
                    label=title)  # fmt: skip
    pool_ax.set(xlabel="step", ylabel="questions in the pool", title="pool size")
    acc_ax.set(xlabel="step", ylabel="Solver pass@1 (%)", title="held-out accuracy")
    acc_ax.legend(fontsize=7)
    _save(figure, path)
    return figure

"""Pooling several runs (seeds) of one evaluation: a two-stage bootstrap.

Two sources of chance stack up: which run (seed) came out, and which tasks the
test set holds. The two-stage (hierarchical) bootstrap draws both: it resamples
runs with replacement, then, within each drawn run, that run's tasks within
their env. The statistic is the mean over the drawn runs of each run's pooled
success (or paired difference). The resamples are drawn with numpy
(``evoflow.stats.bootstrap.resampled_means``): ``scipy.stats.bootstrap`` has
no two-stage scheme.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evoflow.stats._inputs import (
    Groups,
    Scores,
    all_equal,
    check_draws,
    check_level,
    group_scores,
    is_constant,
    pooled_mean,
    shared_pairs,
)
from evoflow.stats.bootstrap import percentile_interval, resampled_means

T_TEST = "one-sample t-test"


@dataclass(frozen=True)
class RunEstimate:
    """A mean over runs with its two-stage bootstrap interval.

    Attributes
    ----------
    mean
        Mean over runs of each run's pooled success (or paired difference).
    low, high
        Percentile interval of the two-stage bootstrap.
    runs
        Number of runs. With one, the interval reflects task resampling only.
    per_run
        Each run's pooled success (or paired difference), in run order.
    p_value
        Two-sided p-value of ``test``; None where no test applies.
    test
        ``"one-sample t-test"`` (of the per-run differences against 0), or
        None with ``p_value``.
    level, draws
        The interval's confidence level and number of bootstrap resamples.
    """

    mean: float
    low: float
    high: float
    runs: int
    per_run: tuple[float, ...]
    p_value: float | None
    test: str | None
    level: float
    draws: int


def two_stage_interval(
    runs: Sequence[Groups], level: float, draws: int, seed: int
) -> tuple[float, float]:
    """Percentile interval of the mean over runs under the two-stage bootstrap.

    Each resample draws ``len(runs)`` runs with replacement and, for each drawn
    run (each copy on its own), a resample of its tasks within env; its value
    is the mean over the drawn runs of their pooled means. Zero width where
    every run is constant within each env and all runs agree.
    """
    per_run = [pooled_mean(groups) for groups in runs]
    if all_equal(per_run) and all(is_constant(groups) for groups in runs):
        mean = float(np.mean(per_run))
        return mean, mean
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(runs), size=(draws, len(runs)))
    totals = np.zeros(draws)
    for slot in range(len(runs)):
        for index, groups in enumerate(runs):
            rows = np.flatnonzero(picks[:, slot] == index)
            totals[rows] += resampled_means(groups, rows.size, rng)
    return percentile_interval(totals / len(runs), level)


def _check_runs(runs: Sequence[Scores], what: str) -> None:
    if isinstance(runs, str) or not isinstance(runs, Sequence):
        raise ValueError(f"{what}: runs must be a sequence of mappings, one a run")
    if not runs:
        raise ValueError(f"{what}: no runs")


def _run_differences(
    runs_a: Sequence[Scores], runs_b: Sequence[Scores]
) -> list[Groups]:
    """Per run, env -> A's value minus B's on each task both played."""
    groups = []
    for i, (a, b) in enumerate(zip(runs_a, runs_b, strict=True)):
        groups_a, groups_b = shared_pairs(a, b, f"paired_over_runs (run {i})")
        groups.append({env: groups_a[env] - groups_b[env] for env in groups_a})
    return groups


def pooled_over_runs(
    runs: Sequence[Scores],
    level: float = 0.95,
    draws: int = 10_000,
    seed: int = 0,
) -> RunEstimate:
    """One method's pooled success, averaged over runs.

    Parameters
    ----------
    runs
        One mapping ``(env, task_id) -> success`` (in [0, 1]) per run; runs
        may hold different tasks.
    level
        Confidence level in (0, 1).
    draws
        Number of two-stage bootstrap resamples.
    seed
        Seed of the ``numpy.random.Generator`` behind them.

    Returns
    -------
    RunEstimate
        Mean over runs of each run's pooled success, with the two-stage
        bootstrap interval; no p-value.

    Raises
    ------
    ValueError
        When there is no run, a run has no task, a value lies outside [0, 1],
        ``level`` lies outside (0, 1) or ``draws`` is not a positive integer.
    """
    level, draws = check_level(level), check_draws(draws)
    _check_runs(runs, "pooled_over_runs")
    groups = [
        group_scores(run, f"pooled_over_runs (run {i})") for i, run in enumerate(runs)
    ]
    per_run = tuple(pooled_mean(g) for g in groups)
    low, high = two_stage_interval(groups, level, draws, seed)
    return RunEstimate(
        mean=float(np.mean(per_run)),
        low=low,
        high=high,
        runs=len(runs),
        per_run=per_run,
        p_value=None,
        test=None,
        level=level,
        draws=draws,
    )


def paired_over_runs(
    runs_a: Sequence[Scores],
    runs_b: Sequence[Scores],
    level: float = 0.95,
    draws: int = 10_000,
    seed: int = 0,
) -> RunEstimate:
    """The paired difference of A over B, averaged over runs.

    Parameters
    ----------
    runs_a, runs_b
        One mapping ``(env, task_id) -> success`` per run for A and for B; run
        ``i`` of A is paired with run ``i`` of B over the tasks both played.
    level
        Confidence level in (0, 1).
    draws
        Number of two-stage bootstrap resamples.
    seed
        Seed of the ``numpy.random.Generator`` behind them.

    Returns
    -------
    RunEstimate
        Mean over runs of each run's paired difference (mean of ``a - b`` over
        its shared tasks), the two-stage bootstrap interval of the per-task
        differences, and the p-value of ``scipy.stats.ttest_1samp`` of the
        per-run differences against 0: None with fewer than 2 runs or when all
        per-run differences are equal.

    Raises
    ------
    ValueError
        When A and B hold different numbers of runs (or none), a run pair
        shares no task, a value lies outside [0, 1], ``level`` lies outside
        (0, 1) or ``draws`` is not a positive integer.
    """
    level, draws = check_level(level), check_draws(draws)
    _check_runs(runs_a, "paired_over_runs (A)")
    _check_runs(runs_b, "paired_over_runs (B)")
    if len(runs_a) != len(runs_b):
        raise ValueError(
            f"paired_over_runs: A has {len(runs_a)} runs and B {len(runs_b)}; "
            "run i of A pairs with run i of B"
        )
    groups = _run_differences(runs_a, runs_b)
    per_run = tuple(pooled_mean(g) for g in groups)
    low, high = two_stage_interval(groups, level, draws, seed)
    p_value = None
    if len(per_run) >= 2 and not all_equal(per_run):
        p_value = float(stats.ttest_1samp(per_run, 0.0).pvalue)
    return RunEstimate(
        mean=float(np.mean(per_run)),
        low=low,
        high=high,
        runs=len(per_run),
        per_run=per_run,
        p_value=p_value,
        test=None if p_value is None else T_TEST,
        level=level,
        draws=draws,
    )

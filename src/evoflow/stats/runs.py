"""Pooling several runs (seeds) of one evaluation: a crossed bootstrap.

Two sources of chance stack up: which run (seed) came out, and which tasks the
test set holds. Runs of one config often draw their test tasks from the same
small pools, so they share tasks; resampling each run's tasks on its own would
count a shared task's luck as if each seed had met it afresh and make the
interval too narrow. The crossed bootstrap draws both factors once per
resample: the runs with replacement, and one resample of the union of task
keys within each env, applied to every drawn run (each over the tasks it
played). A task key must name one task in every run (runs that draw their own
problems, as SAGE's seeds do, give them ids of their own and share none). The
statistic is the mean over the drawn runs of each run's pooled success (or
paired difference). The resamples are drawn with numpy:
``scipy.stats.bootstrap`` has no crossed scheme.

A paired comparison carries two p-values, one per source of chance. The
first is the sign-flip permutation test of each task's share of the mean
difference (``task_shares``; under "A and B are exchangeable" each task's
sign is a fair coin, in every run that played it): it holds the runs fixed, so a
training chain's luck that every task shares counts as signal. The second is
a one-sample t-test of the runs' own differences against zero
(``scipy.stats.ttest_1samp``, ``runs - 1`` degrees of freedom): it asks
whether a new run would show the difference, and needs at least two runs. A
reader who wants a difference between methods, not between two chains, asks
both to agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evoflow.stats._inputs import (
    Scores,
    TaskKey,
    all_equal,
    check_draws,
    check_level,
    checked_scores,
    order_key,
    shared_pairs,
)
from evoflow.stats.bootstrap import percentile_interval
from evoflow.stats.paired import sign_flip_p
from evoflow.stats.student import t_p_value

SIGN_FLIP_TASKS = "sign-flip permutation over tasks (mean over runs)"
T_OVER_RUNS = "one-sample t-test of the runs' differences"


@dataclass(frozen=True)
class RunEstimate:
    """A mean over runs with its crossed bootstrap interval.

    Attributes
    ----------
    mean
        Mean over runs of each run's pooled success (or paired difference).
    low, high
        Percentile interval of the crossed bootstrap (runs, and tasks within
        env shared by every drawn run).
    runs
        Number of runs. With one, the interval reflects task resampling only.
    per_run
        Each run's pooled success (or paired difference), in run order.
    p_value
        Two-sided p-value of ``test``; None where no test applies.
    test
        ``SIGN_FLIP_TASKS`` (of each task's share of the mean difference),
        or None with ``p_value``.
    level, draws
        The interval's confidence level and number of bootstrap resamples.
    p_runs
        Two-sided p-value of ``T_OVER_RUNS``, the runs' differences against
        zero; None with fewer than two runs (and for a pooled success).
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
    p_runs: float | None = None


def _table(
    runs: Sequence[Mapping[TaskKey, float]],
) -> tuple[list, np.ndarray, np.ndarray]:
    """(task keys in a fixed order, values, played): rows are runs, columns
    the union of their task keys; a task a run did not play is 0 in both."""
    keys = sorted(set().union(*runs), key=order_key)
    column = {key: j for j, key in enumerate(keys)}
    values = np.zeros((len(runs), len(keys)))
    played = np.zeros((len(runs), len(keys)))
    for r, scores in enumerate(runs):
        for key, value in scores.items():
            values[r, column[key]], played[r, column[key]] = value, 1.0
    return keys, values, played


def _task_weights(keys: list, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Per resample, how often each task was drawn: within each env, as many
    draws with replacement as the env has tasks (shape ``(draws, tasks)``)."""
    weights = np.zeros((draws, len(keys)))
    envs = np.array([str(key[0]) for key in keys])
    for env in dict.fromkeys(envs):
        columns = np.flatnonzero(envs == env)
        share = np.full(columns.size, 1.0 / columns.size)
        weights[:, columns] = rng.multinomial(columns.size, share, size=draws)
    return weights


def crossed_interval(
    runs: Sequence[Mapping[TaskKey, float]], level: float, draws: int, seed: int
) -> tuple[float, float]:
    """Percentile interval of the mean over runs under the crossed bootstrap.

    Each resample draws ``len(runs)`` runs with replacement and one resample
    of the tasks within env; every drawn run's pooled mean is taken over the
    drawn tasks it played (a run none of whose tasks were drawn sits that
    resample out). Zero width where nothing a resample can move varies.
    """
    keys, values, played = _table(runs)
    per_run = (values * played).sum(axis=1) / played.sum(axis=1)
    envs = np.array([str(key[0]) for key in keys])
    if all_equal(per_run) and all(
        all_equal(values[:, envs == env][played[:, envs == env] > 0])
        for env in set(envs)
    ):  # every env one value throughout: no resample moves anything
        return float(per_run.mean()), float(per_run.mean())
    rng = np.random.default_rng(seed)
    weights = _task_weights(keys, draws, rng)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (weights @ (values * played).T) / (weights @ played.T)
    picks = rng.integers(0, len(runs), size=(draws, len(runs)))
    drawn = np.take_along_axis(means, picks, axis=1)
    kept = ~np.all(np.isnan(drawn), axis=1)
    return percentile_interval(np.nanmean(drawn[kept], axis=1), level)


def task_shares(differences: Sequence[Mapping[TaskKey, float]]) -> np.ndarray:
    """Each task's share of the mean over runs of the runs' mean differences:
    the sum over the runs that played it of its difference divided by that
    run's task count, over the number of runs. The shares sum to that mean, so
    a test of their signs tests the reported difference itself; the mean of
    the tasks' own averages would weigh a task by the runs it is in (a task
    shared by all runs counts once, a run's own tasks weigh more in a run
    with fewer) and can point the other way where runs share some tasks."""
    _, values, played = _table(differences)
    per_run = values / played.sum(axis=1, keepdims=True)
    return per_run.sum(axis=0) / len(differences)


def _pooled(scores: Mapping[TaskKey, float]) -> float:
    """The mean over all tasks of one run, each task weighted equally."""
    return float(np.mean(list(scores.values())))


def _check_runs(runs: Sequence[Scores], what: str) -> None:
    if isinstance(runs, str) or not isinstance(runs, Sequence):
        raise ValueError(f"{what}: runs must be a sequence of mappings, one a run")
    if not runs:
        raise ValueError(f"{what}: no runs")


def _run_differences(
    runs_a: Sequence[Scores], runs_b: Sequence[Scores]
) -> list[dict[TaskKey, float]]:
    """Per run, task key -> A's value minus B's, on the tasks both played."""
    differences = []
    for i, (a, b) in enumerate(zip(runs_a, runs_b, strict=True)):
        shared_pairs(a, b, f"paired_over_runs (run {i})")  # checks both
        differences.append({k: float(a[k]) - float(b[k]) for k in a if k in b})
    return differences


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
        Number of crossed bootstrap resamples.
    seed
        Seed of the ``numpy.random.Generator`` behind them.

    Returns
    -------
    RunEstimate
        Mean over runs of each run's pooled success, with the crossed
        bootstrap interval; no p-value.

    Raises
    ------
    ValueError
        When there is no run, a run has no task, a value lies outside [0, 1],
        ``level`` lies outside (0, 1) or ``draws`` is not a positive integer.
    """
    level, draws = check_level(level), check_draws(draws)
    _check_runs(runs, "pooled_over_runs")
    checked = [
        checked_scores(run, f"pooled_over_runs (run {i})") for i, run in enumerate(runs)
    ]
    per_run = tuple(_pooled(scores) for scores in checked)
    low, high = crossed_interval(checked, level, draws, seed)
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
        Number of crossed bootstrap resamples (and of sign flips drawn where
        they are not enumerated).
    seed
        Seed of the ``numpy.random.Generator`` behind them.

    Returns
    -------
    RunEstimate
        Mean over runs of each run's paired difference (mean of ``a - b`` over
        its shared tasks), the crossed bootstrap interval, the p-value of the
        sign-flip permutation test of each task's share of that mean
        (``task_shares``: flipping a task flips its difference in every run
        that played it), and ``p_runs``, the t-test of the runs' differences:
        both None with fewer than 2 runs.

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
    differences = _run_differences(runs_a, runs_b)
    per_run = tuple(_pooled(d) for d in differences)
    low, high = crossed_interval(differences, level, draws, seed)
    p_value = None
    if len(per_run) >= 2:
        p_value = sign_flip_p(task_shares(differences), draws, seed)
    return RunEstimate(
        mean=float(np.mean(per_run)),
        low=low,
        high=high,
        runs=len(per_run),
        per_run=per_run,
        p_value=p_value,
        test=None if p_value is None else SIGN_FLIP_TASKS,
        level=level,
        draws=draws,
        p_runs=t_p_value(per_run),
    )

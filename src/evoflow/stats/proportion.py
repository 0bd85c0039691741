"""A success rate with its interval: Wilson for counts, a bootstrap for means.

``proportion`` serves a cell that counts successes over episodes (k of n).
``task_mean`` serves a cell whose tasks carry a fractional success (a random
baseline averaged over seeds, say): the mean over tasks, with a bootstrap
interval that resamples tasks within each env.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evoflow.stats._inputs import (
    check_draws,
    check_level,
    check_unit_values,
    pooled_mean,
)
from evoflow.stats.bootstrap import stratified_interval


@dataclass(frozen=True)
class Proportion:
    """``k`` successes of ``n`` episodes, as a rate with its Wilson interval.

    Attributes
    ----------
    k, n
        Successes and episodes.
    rate
        ``k / n``, in [0, 1].
    low, high
        The Wilson score interval, within [0, 1].
    level
        Its confidence level.
    """

    k: int
    n: int
    rate: float
    low: float
    high: float
    level: float = 0.95


@dataclass(frozen=True)
class Estimate:
    """A mean success over tasks with its stratified bootstrap interval.

    Attributes
    ----------
    rate
        The mean over all tasks of all envs (each task weighted equally).
    low, high
        The percentile interval, within [0, 1].
    tasks
        How many tasks the mean is over.
    envs
        The envs, sorted.
    level, draws
        The interval's confidence level and number of bootstrap resamples.
    """

    rate: float
    low: float
    high: float
    tasks: int
    envs: tuple[str, ...]
    level: float
    draws: int


def _count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer count, got {value!r}")
    return int(value)


def proportion(k: int, n: int, level: float = 0.95) -> Proportion:
    """The success rate ``k / n`` with its Wilson score interval.

    Parameters
    ----------
    k
        Successes, ``0 <= k <= n``.
    n
        Episodes, at least 1.
    level
        Confidence level in (0, 1).

    Returns
    -------
    Proportion

    Raises
    ------
    ValueError
        When ``n`` is 0 (no episodes), ``k`` lies outside ``[0, n]``, either is
        not an integer, or ``level`` lies outside (0, 1).

    Notes
    -----
    ``scipy.stats.binomtest(k, n).proportion_ci(level, method="wilson")``: the
    score interval without continuity correction, which stays inside [0, 1]
    and keeps close to its nominal coverage for small ``n``, unlike the normal
    (Wald) interval.
    """
    k, n = _count(k, "k (successes)"), _count(n, "n (episodes)")
    level = check_level(level)
    if n == 0:
        raise ValueError("n (episodes) is 0: a success rate needs an episode")
    if not 0 <= k <= n:
        raise ValueError(f"k (successes) must lie in [0, n={n}], got {k}")
    interval = stats.binomtest(k, n).proportion_ci(
        confidence_level=level, method="wilson"
    )
    low = min(max(float(interval.low), 0.0), 1.0)
    high = min(max(float(interval.high), 0.0), 1.0)
    return Proportion(k=k, n=n, rate=k / n, low=low, high=high, level=level)


def task_mean(
    values_by_env: Mapping[str, Sequence[float]],
    level: float = 0.95,
    draws: int = 10_000,
    seed: int = 0,
) -> Estimate:
    """The mean success over tasks, with a stratified bootstrap interval.

    Parameters
    ----------
    values_by_env
        Env -> the success of each of its tasks, each in [0, 1] (a task played
        over several seeds carries the fraction it won).
    level
        Confidence level in (0, 1).
    draws
        Number of bootstrap resamples.
    seed
        Seed of the ``numpy.random.Generator`` behind the resamples.

    Returns
    -------
    Estimate
        The mean over all tasks, each weighted equally, with the percentile
        interval of ``scipy.stats.bootstrap`` resampling tasks within each env
        (``evoflow.stats.bootstrap.stratified_interval``).

    Raises
    ------
    ValueError
        When there is no task, a value lies outside [0, 1], ``level`` lies
        outside (0, 1) or ``draws`` is not a positive integer.
    """
    level, draws = check_level(level), check_draws(draws)
    groups = {
        str(env): check_unit_values(values, f"task_mean (env {env!r})")
        for env, values in sorted(values_by_env.items())
    }
    groups = {env: values for env, values in groups.items() if values.size}
    if not groups:
        raise ValueError("task_mean: no tasks")
    low, high = stratified_interval(groups, level, draws, seed)
    return Estimate(
        rate=pooled_mean(groups),
        low=low,
        high=high,
        tasks=sum(values.size for values in groups.values()),
        envs=tuple(groups),
        level=level,
        draws=draws,
    )

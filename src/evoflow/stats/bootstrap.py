"""The stratified bootstrap of a pooled mean over tasks.

Tasks are resampled with replacement *within* their env, each env keeping its
number of tasks, and the statistic is the mean over all resampled tasks (each
task weighted equally). Resampling within envs keeps every env's share of the
pool fixed, as in the evaluation itself, so only the spread of tasks inside an
env widens the interval. Intervals are percentile intervals (linear
interpolation between order statistics, as ``scipy.stats.quantile``).

``stratified_interval`` runs ``scipy.stats.bootstrap``; the crossed bootstrap
over runs (``evoflow.stats.runs``) draws its resamples with numpy itself.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from evoflow.stats._inputs import Groups, all_equal, is_constant, pooled_mean

# elements per resampled batch (about 32 MiB of float64)
_BATCH_ELEMENTS = 1 << 22


def _split(groups: Groups) -> tuple[list[np.ndarray], float, int]:
    """The envs that vary, the summed values of the others, and the task count.

    An env whose values are all equal (one task, say) contributes the same sum
    to every resample, so it is added as a constant rather than resampled
    (``scipy.stats.bootstrap`` also refuses samples of a single value).
    """
    varying = [values for values in groups.values() if not all_equal(values)]
    fixed = sum(float(values.sum()) for values in groups.values() if all_equal(values))
    total = sum(values.size for values in groups.values())
    return varying, fixed, total


def stratified_interval(
    groups: Groups, level: float, draws: int, seed: int
) -> tuple[float, float]:
    """Percentile interval of the pooled mean under the stratified bootstrap.

    Parameters
    ----------
    groups
        Env -> array of task values (checked by the caller).
    level
        Confidence level in (0, 1).
    draws
        Number of bootstrap resamples.
    seed
        Seed of the ``numpy.random.Generator`` that draws them.

    Returns
    -------
    tuple of float
        ``(low, high)``. Where no env varies the resamples all equal the
        estimate, and so do both ends (no NaN, no warning).

    Notes
    -----
    ``scipy.stats.bootstrap`` is given one sample per varying env with
    ``paired=False``, so each is resampled on its own with its own size, and a
    vectorized statistic that pools the resampled sums with the constant envs.
    """
    if is_constant(groups):
        estimate = pooled_mean(groups)
        return estimate, estimate
    varying, fixed, total = _split(groups)

    def statistic(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        sums = sum(sample.sum(axis=axis) for sample in samples)
        return (sums + fixed) / total

    batch = max(1, min(draws, _BATCH_ELEMENTS // total))
    result = stats.bootstrap(
        varying,
        statistic,
        n_resamples=draws,
        batch=batch,
        vectorized=True,
        paired=False,
        axis=-1,
        confidence_level=level,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)


def percentile_interval(distribution: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` percentile interval of a bootstrap distribution."""
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(distribution, [alpha, 1.0 - alpha], method="linear")
    return float(low), float(high)

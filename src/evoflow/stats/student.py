"""A few seeds' measurements: Student's t, where the seed is the unit.

Where each seed gives one number (a run's final accuracy, a run's paired
difference) and the seeds are independent draws of what the seed decides in
the run, the mean over seeds has a t interval on ``seeds - 1`` degrees of
freedom, and a paired difference (A and B run with the same seed) a
one-sample t-test of the per-seed differences (``scipy.stats``). With one seed
there is neither; with seeds that all gave the same non-zero number there is
no spread to scale by, and no p-value either (an interval of no width).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from evoflow.stats._inputs import EQUAL, all_equal, check_level


@dataclass(frozen=True)
class SeedMean:
    """The mean of per-seed values with its t interval.

    Attributes
    ----------
    mean
        Mean over seeds.
    low, high
        The ``level`` t interval; None with one seed.
    seeds
        How many seeds.
    p_value
        Two-sided p of the one-sample t-test against zero (for a paired
        difference); None with one seed.
    level
        The interval's confidence level.
    """

    mean: float
    low: float | None
    high: float | None
    seeds: int
    p_value: float | None
    level: float


def t_p_value(values: Sequence[float]) -> float | None:
    """Two-sided p of a one-sample t-test of ``values`` against zero.

    None with fewer than two values. Values that are all equal leave no
    spread to scale by: p is 1.0 when they are all zero, and None otherwise
    (scipy would give NaN; claiming certainty from two or three identical
    numbers would read more into them than they hold).
    """
    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return None
    if all_equal(array):
        return 1.0 if abs(float(array.mean())) <= EQUAL else None
    return float(stats.ttest_1samp(array, 0.0).pvalue)


def seed_mean(values: Sequence[float], level: float = 0.95) -> SeedMean:
    """Mean over seeds, its t interval and the t-test against zero.

    Raises
    ------
    ValueError
        With no value, a value that is not finite, or ``level`` outside (0, 1).
    """
    level = check_level(level)
    array = np.asarray(values, dtype=float)
    if array.size == 0 or not np.all(np.isfinite(array)):
        raise ValueError(
            f"seed_mean: needs finite values, one per seed; got {values!r}"
        )
    mean = float(array.mean())
    if array.size < 2:
        return SeedMean(mean, None, None, 1, None, level)
    half = 0.0
    if not all_equal(array):
        sem = float(stats.sem(array))
        half = float(stats.t.ppf(0.5 + level / 2, array.size - 1)) * sem
    return SeedMean(mean, mean - half, mean + half, int(array.size),
                    t_p_value(array), level)  # fmt: skip


def paired_seeds(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> SeedMean:
    """A minus B, seed by seed (``a[i]`` and ``b[i]`` share seed ``i``)."""
    if len(a) != len(b):
        raise ValueError(
            f"paired_seeds: A has {len(a)} seeds and B {len(b)}; seed i pairs with seed i"
        )
    return seed_mean([float(x) - float(y) for x, y in zip(a, b, strict=True)], level)

"""Wilson intervals and the stratified mean over tasks, against hand-worked numbers."""

from __future__ import annotations

import math
import warnings

import pytest

from evoflow.stats import Estimate, Proportion, proportion, task_mean

Z95 = 1.959964  # the 97.5 % quantile of the standard normal
Z90 = 1.644854  # its 95 % quantile


def wilson(k: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval, written out from its formula."""
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def test_wilson_interval_of_8_of_20_matches_the_formula():
    # Prepare
    low, high = wilson(8, 20, Z95)

    # Execute
    result = proportion(8, 20)

    # Assert
    assert isinstance(result, Proportion)
    assert (result.k, result.n, result.rate) == (8, 20, 0.4)
    assert (low, high) == pytest.approx((0.2188, 0.6134), abs=1e-4)
    assert result.low == pytest.approx(low, abs=1e-4)
    assert result.high == pytest.approx(high, abs=1e-4)


def test_wilson_interval_follows_the_level():
    # Prepare
    low, high = wilson(8, 20, Z90)

    # Execute
    result = proportion(8, 20, level=0.90)

    # Assert
    assert (result.low, result.high) == pytest.approx((low, high), abs=1e-4)
    assert result.level == 0.90


def test_no_success_gives_low_zero_and_high_z2_over_n_plus_z2():
    # Prepare: with k = 0 the upper end is z^2 / (n + z^2)
    high = Z95**2 / (20 + Z95**2)

    # Execute
    none, every = proportion(0, 20), proportion(20, 20)

    # Assert
    assert none.rate == 0.0 and none.low == 0.0
    assert none.high == pytest.approx(0.1611, abs=1e-4)
    assert none.high == pytest.approx(high, abs=1e-6)
    assert every.high == 1.0 and every.low == pytest.approx(1 - high, abs=1e-6)


@pytest.mark.parametrize(
    ("k", "n", "level", "message"),
    [
        (0, 0, 0.95, "n \\(episodes\\) is 0"),
        (21, 20, 0.95, "k \\(successes\\) must lie in \\[0, n=20\\]"),
        (-1, 20, 0.95, "k \\(successes\\) must lie"),
        (1.5, 20, 0.95, "k \\(successes\\) must be an integer"),
        (8, 20, 0.0, "confidence level must lie in \\(0, 1\\)"),
        (8, 20, 1.0, "confidence level must lie in \\(0, 1\\)"),
        (8, 20, 95, "confidence level must lie in \\(0, 1\\)"),
    ],
)
def test_proportion_rejects_bad_input_naming_it(k, n, level, message):
    # Execute / Assert
    with pytest.raises(ValueError, match=message):
        proportion(k, n, level=level)


def test_task_mean_resamples_within_env_exactly_as_enumerated():
    # Prepare: maze's two tasks {0, 1} resample to a sum of 0, 1 or 2 with
    # probabilities 1/4, 1/2, 1/4; babyai (four tasks at 0.5) always sums to 2.
    # The pooled mean over 6 tasks is (2 + s) / 6 in {1/3, 1/2, 2/3}, so the
    # 2.5 % and 97.5 % quantiles are 1/3 and 2/3 (each end has mass 1/4).
    values = {"maze": [0.0, 1.0], "babyai": [0.5, 0.5, 0.5, 0.5]}

    # Execute
    result = task_mean(values, draws=2000, seed=3)

    # Assert
    assert isinstance(result, Estimate)
    assert result.rate == pytest.approx(0.5)
    assert (result.low, result.high) == pytest.approx((1 / 3, 2 / 3))
    assert (result.tasks, result.envs) == (6, ("babyai", "maze"))
    assert (result.level, result.draws) == (0.95, 2000)


def test_task_mean_of_constant_tasks_has_zero_width_and_no_warning():
    # Prepare
    values = {"maze": [0.25, 0.25, 0.25], "babyai": [0.75]}

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = task_mean(values, draws=2000)

    # Assert: one per env is constant, so every resample is the estimate
    assert result.rate == pytest.approx(0.375)
    assert result.low == result.high == result.rate


def test_task_mean_is_reproducible_by_seed():
    # Prepare
    values = {"maze": [i / 19 for i in range(20)], "babyai": [0.1, 0.9, 0.4] * 5}

    # Execute
    first = task_mean(values, draws=2000, seed=1)
    again = task_mean(values, draws=2000, seed=1)
    other = task_mean(values, draws=2000, seed=2)

    # Assert
    assert (first.low, first.high) == (again.low, again.high)
    assert (first.low, first.high) != (other.low, other.high)
    assert first.low < first.rate < first.high
    assert (first.low, first.high) == pytest.approx((other.low, other.high), abs=0.03)


@pytest.mark.parametrize(
    ("values", "level", "draws", "message"),
    [
        ({"maze": [0.5, 1.5]}, 0.95, 100, "must lie in \\[0, 1\\], got 1.5"),
        ({"maze": [-0.1]}, 0.95, 100, "must lie in \\[0, 1\\], got -0.1"),
        ({"maze": [float("nan")]}, 0.95, 100, "must lie in \\[0, 1\\]"),
        ({"maze": []}, 0.95, 100, "no tasks"),
        ({"maze": [0.5]}, 1.5, 100, "confidence level must lie in \\(0, 1\\)"),
        ({"maze": [0.5]}, 0.95, 0, "draws must be at least 1"),
    ],
)
def test_task_mean_rejects_bad_input_naming_it(values, level, draws, message):
    # Execute / Assert
    with pytest.raises(ValueError, match=message):
        task_mean(values, level=level, draws=draws)

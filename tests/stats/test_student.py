"""Student's t over seeds, against numbers worked by hand."""

from __future__ import annotations

import pytest

from evoflow.stats import paired_seeds, seed_mean


def test_three_seeds_get_the_t_interval_worked_by_hand():
    # Prepare: 1, 2, 3: mean 2, sd 1, standard error 1/sqrt 3. Student's t with
    # 2 df has the quantile (2q - 1) sqrt(2 / (1 - (2q - 1)^2)); at q = 0.975
    # that is 0.95 sqrt(2 / 0.0975) = 4.3027, so the half-width is 2.4841.
    q = 0.95 * (2 / 0.0975) ** 0.5

    # Execute
    result = seed_mean([1.0, 2.0, 3.0])

    # Assert
    assert result.mean == 2.0 and result.seeds == 3
    assert (result.low, result.high) == pytest.approx((2 - q / 3**0.5, 2 + q / 3**0.5))
    assert result.high - result.mean == pytest.approx(2.4841, abs=1e-4)
    # t = 2 / (1 / sqrt 3) = 2 sqrt 3 on 2 df: p = 1 - t / sqrt(2 + t^2)
    assert result.p_value == pytest.approx(1 - 12**0.5 / 14**0.5)


def test_a_paired_difference_is_taken_seed_by_seed():
    # Prepare: A beats B by 2 in every seed whatever the seed's level, so the
    # paired interval has no width; unpaired, the levels' spread would hide it
    a, b = [10.0, 50.0, 90.0], [8.0, 48.0, 88.0]

    # Execute
    result = paired_seeds(a, b)

    # Assert
    assert (result.mean, result.low, result.high) == (2.0, 2.0, 2.0)
    assert result.p_value is None  # three equal numbers: no spread to test with
    assert seed_mean(a).high - seed_mean(a).low > 100


def test_one_seed_has_a_mean_and_nothing_else():
    result = seed_mean([0.7])
    assert (result.mean, result.low, result.high, result.p_value) == (
        0.7,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: seed_mean([]), "needs finite values"),
        (lambda: seed_mean([1.0, float("nan")]), "needs finite values"),
        (lambda: paired_seeds([1.0, 2.0], [1.0]), "A has 2 seeds and B 1"),
        (lambda: seed_mean([1.0, 2.0], level=1.5), "level"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()

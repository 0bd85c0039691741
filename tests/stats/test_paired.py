"""Paired differences: McNemar, sign flips and the stratified bootstrap, by hand."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from evoflow.stats import PairedDifference, paired_difference


def scores(env: str, values: list[float], start: int = 0) -> dict:
    """Task key (env, i) -> value, for tasks start, start + 1, …"""
    return {(env, start + i): v for i, v in enumerate(values)}


def exact_sign_flip_p(differences: list[float]) -> float:
    """Two-sided sign-flip p-value, by enumerating all 2**n sign patterns."""
    observed = abs(sum(differences))
    sums = [
        abs(sum(s * d for s, d in zip(signs, differences, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(differences))
    ]
    return sum(s >= observed - 1e-12 for s in sums) / len(sums)


def test_mcnemar_exact_on_a_known_table():
    # Prepare: 10 tasks; both solve 2, neither 1, only A 6, only B 1.
    # p = 2 * P(X <= 1 | n = 7, p = 1/2) = 2 * (1 + 7) / 128 = 0.125.
    a = scores("maze", [1, 1, 1, 1, 1, 1, 1, 1, 0, 0])
    b = scores("maze", [1, 1, 0, 0, 0, 0, 0, 0, 1, 0])

    # Execute
    result = paired_difference(a, b, draws=2000)

    # Assert
    assert isinstance(result, PairedDifference)
    assert (result.a_only, result.b_only) == (6, 1)
    assert result.p_value == pytest.approx(2 * (1 + 7) / 128)
    assert result.difference == pytest.approx(5 / 10)
    assert (result.test, result.tasks, result.envs) == ("McNemar exact", 10, ("maze",))
    assert result.low <= result.difference <= result.high


def test_mcnemar_with_more_discordant_pairs_matches_the_binomial_tail():
    # Prepare: only A 9, only B 2, over two envs; p = 2 * sum_{i<=2} C(11, i) / 2^11
    a = scores("maze", [1] * 6 + [0]) | scores("babyai", [1] * 3 + [0] * 2)
    b = scores("maze", [0] * 6 + [1]) | scores("babyai", [0, 0, 0, 1, 0])
    tail = sum(math.comb(11, i) for i in range(3)) / 2**11

    # Execute
    result = paired_difference(a, b, draws=2000)

    # Assert
    assert (result.a_only, result.b_only) == (9, 2)
    assert result.p_value == pytest.approx(2 * tail)
    assert result.difference == pytest.approx(7 / 12)
    assert result.envs == ("babyai", "maze")


def test_no_discordant_pair_gives_p_one_and_zero_width_without_warning():
    # Prepare
    a = scores("maze", [1, 0, 1]) | scores("babyai", [0, 0])
    b = dict(a)

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired_difference(a, b, draws=2000)

    # Assert
    assert (result.a_only, result.b_only, result.p_value) == (0, 0, 1.0)
    assert result.difference == result.low == result.high == 0.0


def test_all_equal_differences_give_a_zero_width_interval():
    # Prepare: A beats B by 0.3 on every task (fractional values)
    a = scores("maze", [0.5, 0.8, 0.3]) | scores("babyai", [0.9])
    b = scores("maze", [0.2, 0.5, 0.0]) | scores("babyai", [0.6])

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired_difference(a, b, draws=2000)

    # Assert
    assert result.difference == pytest.approx(0.3)
    assert result.low == result.high == result.difference
    assert not math.isnan(result.low)


def test_only_shared_tasks_count():
    # Prepare: A also played maze 5 and 6, B also babyai 0; neither counts
    a = scores("maze", [1, 1, 0, 0, 1, 1, 1])
    b = scores("maze", [0, 1, 0, 1, 0]) | scores("babyai", [1])

    # Execute
    result = paired_difference(a, b, draws=2000)

    # Assert: shared maze 0..4: A 1,1,0,0,1 vs B 0,1,0,1,0
    assert result.tasks == 5 and result.envs == ("maze",)
    assert (result.a_only, result.b_only) == (2, 1)
    assert result.difference == pytest.approx(1 / 5)


def test_stratified_bootstrap_matches_the_enumerated_distribution():
    # Prepare: maze's 4 tasks all differ by +1; babyai's 2 differ by 0 and +1.
    # Within env, maze always sums to 4 and babyai to s in {0, 1, 2} (mass 1/4,
    # 1/2, 1/4), so the pooled difference (4 + s) / 6 has 2.5 % and 97.5 %
    # quantiles 4/6 and 1. Resampling across envs would reach 3/6 or lower.
    a = scores("maze", [1, 1, 1, 1]) | scores("babyai", [1, 1])
    b = scores("maze", [0, 0, 0, 0]) | scores("babyai", [1, 0])
    babyai_a, babyai_b = scores("babyai", [1, 1]), scores("babyai", [1, 0])

    # Execute
    both = paired_difference(a, b, draws=2000, seed=5)
    alone = paired_difference(babyai_a, babyai_b, draws=2000, seed=5)

    # Assert
    assert both.difference == pytest.approx(5 / 6)
    assert (both.low, both.high) == pytest.approx((4 / 6, 1.0))
    assert (alone.low, alone.high) == pytest.approx((0.0, 1.0))
    # the constant env only dilutes babyai's spread by its share of the tasks
    assert both.high - both.low == pytest.approx((alone.high - alone.low) * 2 / 6)


def test_sign_flip_p_of_three_positive_fractions_is_two_eighths():
    # Prepare: differences 0.5, 0.25, 0.75; only "all +" and "all -" reach
    # |mean| >= 0.5, so p = 2 / 8.
    a = scores("maze", [0.5, 0.25, 0.75])
    b = scores("maze", [0.0, 0.0, 0.0])

    # Execute
    result = paired_difference(a, b, draws=2000)

    # Assert
    assert result.test == "sign-flip permutation"
    assert (result.a_only, result.b_only) == (None, None)
    assert result.p_value == pytest.approx(2 / 8)
    assert result.difference == pytest.approx(0.5)


def test_sign_flip_p_matches_full_enumeration():
    # Prepare: 9 fractional differences of both signs (2**9 = 512 <= draws,
    # so the test enumerates exactly)
    gen = np.random.default_rng(11)
    a_values = [round(float(v), 2) for v in gen.uniform(0, 1, 9)]
    b_values = [round(float(v), 2) for v in gen.uniform(0, 1, 9)]
    a = scores("maze", a_values[:5]) | scores("babyai", a_values[5:])
    b = scores("maze", b_values[:5]) | scores("babyai", b_values[5:])
    expected = exact_sign_flip_p(
        [x - y for x, y in zip(a_values, b_values, strict=True)]
    )

    # Execute
    result = paired_difference(a, b, draws=2000)

    # Assert
    assert 0.05 < expected < 0.95  # a case where the tail matters
    assert result.p_value == pytest.approx(expected)


def test_same_seed_same_interval_other_seed_slightly_different():
    # Prepare: 40 tasks over two envs with a mixed record
    gen = np.random.default_rng(7)
    a = {
        ("maze" if i < 25 else "babyai", i): int(v)
        for i, v in enumerate(gen.integers(0, 2, 40))
    }
    b = {
        ("maze" if i < 25 else "babyai", i): int(v)
        for i, v in enumerate(gen.integers(0, 2, 40))
    }

    # Execute
    first = paired_difference(a, b, draws=2000, seed=1)
    again = paired_difference(a, b, draws=2000, seed=1)
    other = paired_difference(a, b, draws=2000, seed=2)

    # Assert
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert (first.low, first.high) == pytest.approx((other.low, other.high), abs=0.05)
    assert first.p_value == other.p_value  # McNemar does not depend on the seed


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        (scores("maze", [1]), scores("babyai", [1]), {}, "share no test task"),
        ({}, scores("maze", [1]), {}, "share no test task"),
        (
            scores("maze", [1.5]),
            scores("maze", [1]),
            {},
            "\\(A\\).*\\[0, 1\\], got 1.5",
        ),
        (
            scores("maze", [1]),
            scores("maze", [-0.5]),
            {},
            "\\(B\\).*\\[0, 1\\], got -0.5",
        ),
        (scores("maze", [float("nan")]), scores("maze", [1]), {}, "\\[0, 1\\]"),
        ({"maze": 1}, scores("maze", [1]), {}, "task key must be \\(env, task_id\\)"),
        (scores("maze", [1]), scores("maze", [0]), {"level": 0}, "level must lie in"),
        (scores("maze", [1]), scores("maze", [0]), {"level": 1.2}, "level must lie in"),
        (
            scores("maze", [1]),
            scores("maze", [0]),
            {"draws": 0},
            "draws must be at least 1",
        ),
    ],
)
def test_paired_difference_rejects_bad_input_naming_it(a, b, kwargs, message):
    # Execute / Assert
    with pytest.raises(ValueError, match=message):
        paired_difference(a, b, **kwargs)

"""Pooling runs: the crossed bootstrap and the sign-flip test over tasks,
against enumerations."""

from __future__ import annotations

import itertools
import warnings

import pytest

from evoflow.stats import RunEstimate, paired_over_runs, pooled_over_runs


def run(env_values: dict[str, list[float]]) -> dict:
    """Task key (env, i) -> value, one run."""
    return {(env, i): v for env, vals in env_values.items() for i, v in enumerate(vals)}


def exact_quantile(outcomes: list[float], q: float) -> float:
    """The q-quantile of equally likely ``outcomes``, away from any jump.

    Asserts that q does not sit (within 3 %) on a step of the distribution
    function, where a finite bootstrap could land on either side.
    """
    distinct = sorted({round(v, 12) for v in outcomes})
    cdf = [sum(round(o, 12) <= v for o in outcomes) / len(outcomes) for v in distinct]
    assert all(abs(c - q) > 0.03 for c in cdf)
    return next(v for v, c in zip(distinct, cdf, strict=True) if c >= q)


def test_runs_constant_within_match_the_enumerated_run_resampling():
    # Prepare: within each run every task has the same value, so only the draw
    # of runs moves the mean. Three runs at 0.2, 0.5, 0.9: the 27 equally
    # likely ordered draws give means whose 10 % and 90 % quantiles are
    # 0.3 (0.2, 0.2, 0.5) and 0.7667 (0.5, 0.9, 0.9).
    values = [0.2, 0.5, 0.9]
    runs = [run({"maze": [v] * 4, "babyai": [v] * 2}) for v in values]
    means = [sum(draw) / 3 for draw in itertools.product(values, repeat=3)]

    # Execute
    result = pooled_over_runs(runs, level=0.8, draws=2000, seed=4)

    # Assert
    assert isinstance(result, RunEstimate)
    assert result.runs == 3
    assert result.per_run == pytest.approx((0.2, 0.5, 0.9))
    assert result.mean == pytest.approx(1.6 / 3)
    assert result.low == pytest.approx(exact_quantile(means, 0.1))
    assert result.high == pytest.approx(exact_quantile(means, 0.9))
    assert (result.low, result.high) == pytest.approx((0.3, 2.3 / 3))
    assert (result.p_value, result.test) == (None, None)


def test_two_constant_runs_match_their_enumeration():
    # Prepare: two runs at 0.25 and 0.75; draws (a, a), (a, b), (b, a), (b, b)
    values = [0.25, 0.75]
    runs = [run({"maze": [v] * 3}) for v in values]
    means = [sum(draw) / 2 for draw in itertools.product(values, repeat=2)]

    # Execute
    result = pooled_over_runs(runs, level=0.8, draws=2000, seed=0)

    # Assert
    assert (result.low, result.high) == pytest.approx(
        (exact_quantile(means, 0.1), exact_quantile(means, 0.9))
    )
    assert (result.low, result.high) == pytest.approx((0.25, 0.75))


def test_one_run_still_works_with_the_task_resampling_only():
    # Prepare: maze always sums to 4 of 4, babyai's {0, 1} to 0, 1 or 2
    # (mass 1/4, 1/2, 1/4): the pooled mean over 6 tasks spans 4/6 .. 1.
    only = run({"maze": [1, 1, 1, 1], "babyai": [0, 1]})

    # Execute
    result = pooled_over_runs([only], draws=2000, seed=2)

    # Assert
    assert (result.runs, result.per_run) == (1, (5 / 6,))
    assert result.mean == pytest.approx(5 / 6)
    assert (result.low, result.high) == pytest.approx((4 / 6, 1.0))


def test_runs_may_hold_different_tasks_and_each_run_counts_once():
    # Prepare: run 0 wins 3 of 4 maze tasks, run 1 none of 2 babyai tasks.
    # The mean over runs is (0.75 + 0) / 2, not the pooled 3 / 6.
    runs = [run({"maze": [1, 1, 1, 0]}), run({"babyai": [0, 0]})]

    # Execute
    result = pooled_over_runs(runs, draws=2000)

    # Assert
    assert result.per_run == (0.75, 0.0)
    assert result.mean == pytest.approx(0.375)
    assert 0.0 <= result.low < result.mean < result.high <= 1.0


def test_identical_constant_runs_give_zero_width_without_warning():
    # Prepare
    runs = [run({"maze": [0.3] * 3, "babyai": [0.3]}) for _ in range(3)]

    # Execute
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pooled = pooled_over_runs(runs, draws=2000)
        paired = paired_over_runs(runs, runs, draws=2000)

    # Assert
    assert pooled.low == pooled.high == pooled.mean == pytest.approx(0.3)
    assert paired.low == paired.high == paired.mean == 0.0
    assert paired.p_value == 1.0  # no task differs: nothing to flip


def test_the_p_value_flips_the_signs_of_per_task_differences_averaged_over_runs():
    # Prepare: two runs on maze tasks 0..3; A - B is (1, 0, 1, -1) in run 0 and
    # (0, 1, 0, 0) in run 1, so the per-task means are (.5, .5, .5, -.5). Of the
    # 16 equally likely sign flips, those whose mean is at least 0.25 in size:
    # all four same sign gives 0.5 (2 flips), three of one sign 0.25 (8 flips),
    # so p = 10/16.
    a = [run({"maze": [1, 0, 1, 0]}), run({"maze": [0, 1, 0, 0]})]
    b = [run({"maze": [0, 0, 0, 1]}), run({"maze": [0, 0, 0, 0]})]

    # Execute
    result = paired_over_runs(a, b, draws=2000)

    # Assert
    assert result.per_run == pytest.approx((0.25, 0.25))
    assert result.test == "sign-flip permutation over tasks (mean over runs)"
    assert result.p_value == pytest.approx(10 / 16)


def test_the_sign_flip_tests_the_reported_mean_where_runs_share_some_tasks():
    # Prepare: tasks s0, s1 (+1 in both runs); run 1 alone also plays p0..p3
    # (-1 each). Run means +1 and (2 - 4)/6 = -1/3: the reported mean is +1/3.
    # Each task's share of it: s_k (1/2 + 1/6) / 2 = 1/3, p_k -(1/6) / 2 = -1/12
    # (2/3 - 4/12 = 1/3). Of the 64 sign flips, |sum| >= 1/3 in all 32 with
    # both shared tasks one sign (|2/3 - B/12| >= 1/3 for B in -4..4) and in 4
    # of the 32 with them opposed (the private signs all equal): p = 36/64.
    # Averaging each task over the runs that played it instead gives
    # (+1, +1, -1, -1, -1, -1), whose mean -1/3 points the other way
    # (p = 1 - 20/64 = 44/64).
    both = {("maze", f"s{k}"): 1.0 for k in range(2)}
    own = {("maze", f"p{k}"): 1.0 for k in range(4)}
    a = [both, {**both, **{key: 0.0 for key in own}}]
    b = [{key: 0.0 for key in both}, {**{key: 0.0 for key in both}, **own}]

    # Execute
    result = paired_over_runs(a, b, draws=2000)

    # Assert
    assert result.per_run == pytest.approx((1.0, -1 / 3))
    assert result.mean == pytest.approx(1 / 3)
    assert result.p_value == pytest.approx(36 / 64)


def test_float_residue_of_averaging_is_no_difference():
    # Prepare: 20 tasks, +0.2 on each in run 0 and -0.2 in run 1 (0.7 - 0.5 and
    # 0.3 - 0.5): every task's share is 0, up to rounding
    a = [run({"maze": [0.7] * 20}), run({"maze": [0.3] * 20})]
    b = [run({"maze": [0.5] * 20})] * 2

    # Execute
    result = paired_over_runs(a, b, draws=2000)

    # Assert: nothing to test, not a sign in every flip (p 0.0002)
    assert result.p_value == 1.0


def test_runs_sharing_their_tasks_share_the_tasks_luck():
    # Prepare: five seeds that all came out alike on the same 13 tasks. Seeds
    # add no information on which tasks the test set holds, so the interval
    # must be as wide as one run's task resampling, not narrower by about
    # sqrt(5) as if each seed had met 13 fresh tasks.
    one = run({"maze": [1, 1, 1] + [0] * 10})
    zero = run({"maze": [0] * 13})

    # Execute
    single = paired_over_runs([one], [zero], draws=10_000, seed=1)
    five = paired_over_runs(
        [one] * 5, [zero] * 5, draws=10_000, seed=1
    )  # 2**13 flips: all

    # Assert: the same width, within bootstrap noise, and not "holds"
    assert five.mean == pytest.approx(3 / 13)
    assert five.high - five.low == pytest.approx(single.high - single.low, abs=0.04)
    assert five.low <= 1 / 13 + 1e-9
    assert five.p_value == pytest.approx(2 / 8)  # 3 tasks differ: 2 of 8 flips


def test_the_runs_own_differences_get_a_t_test_worked_by_hand():
    # Prepare: three runs on 10 maze tasks whose differences are +0.1, +0.2
    # and +0.3: mean 0.2, sd 0.1, t = 0.2 / (0.1 / sqrt 3) = 2 sqrt 3 on 2
    # degrees of freedom. Student's t with 2 df has the closed-form CDF
    # 1/2 + t / (2 sqrt(2 + t^2)), so the two-sided p is 1 - t / sqrt(2 + t^2)
    # = 1 - 2 sqrt 3 / sqrt 14 = 0.07418.
    b = [run({"maze": [0] * 10})] * 3
    a = [run({"maze": [1] * k + [0] * (10 - k)}) for k in (1, 2, 3)]

    # Execute
    result = paired_over_runs(a, b, draws=2000)

    # Assert: the runs' p is over 0.05 though every run is ahead; over tasks,
    # three differ (means 1, 2/3, 1/3), all ahead: 2 of 8 sign flips
    t = 2 * 3**0.5
    assert result.per_run == pytest.approx((0.1, 0.2, 0.3))
    assert result.p_runs == pytest.approx(1 - t / (2 + t * t) ** 0.5, abs=1e-9)
    assert result.p_runs == pytest.approx(0.07418, abs=1e-5)
    assert result.p_value == pytest.approx(2 / 8)


def test_runs_that_agree_exactly_give_no_t_test_unless_all_are_zero():
    b = run({"maze": [0, 0, 0, 0]})
    ahead = run({"maze": [1, 0, 0, 0]})
    assert paired_over_runs([ahead] * 3, [b] * 3, draws=200).p_runs is None
    assert paired_over_runs([b] * 3, [b] * 3, draws=200).p_runs == 1.0
    assert paired_over_runs([ahead], [b], draws=200).p_runs is None


def test_paired_over_runs_pairs_run_i_with_run_i_over_shared_tasks():
    # Prepare: run 0 shares maze 0..1 (A 1, 1 vs B 0, 1); run 1 shares maze 0
    runs_a = [run({"maze": [1, 1, 1]}), run({"maze": [0]})]
    runs_b = [run({"maze": [0, 1]}), run({"maze": [1, 0, 0]})]

    # Execute
    result = paired_over_runs(runs_a, runs_b, draws=2000)

    # Assert
    assert result.per_run == (0.5, -1.0)
    assert result.mean == pytest.approx(-0.25)
    assert result.runs == 2 and result.p_value is not None


def test_one_paired_run_has_no_p_value():
    # Prepare: babyai differs by 0 and +1, maze by +1 on 4 tasks
    a = run({"maze": [1, 1, 1, 1], "babyai": [1, 1]})
    b = run({"maze": [0, 0, 0, 0], "babyai": [1, 0]})

    # Execute
    result = paired_over_runs([a], [b], draws=2000)

    # Assert: the interval is the task resampling alone (4/6 .. 1)
    assert (result.runs, result.p_value, result.test) == (1, None, None)
    assert (result.low, result.high) == pytest.approx((4 / 6, 1.0))


def test_crossed_bootstrap_is_reproducible_by_seed():
    # Prepare
    runs = [run({"maze": [(i * k) % 7 / 6 for i in range(30)]}) for k in (1, 2, 5)]

    # Execute
    first = pooled_over_runs(runs, draws=2000, seed=9)
    again = pooled_over_runs(runs, draws=2000, seed=9)
    other = pooled_over_runs(runs, draws=2000, seed=10)

    # Assert
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert (first.low, first.high) == pytest.approx((other.low, other.high), abs=0.05)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pooled_over_runs([]), "no runs"),
        (lambda: pooled_over_runs([{}]), "run 0\\): no tasks"),
        (lambda: pooled_over_runs({("maze", 0): 1}), "sequence of mappings"),
        (lambda: pooled_over_runs([run({"maze": [2]})]), "\\[0, 1\\], got 2.0"),
        (lambda: pooled_over_runs([run({"maze": [1]})], level=0), "level must lie"),
        (
            lambda: paired_over_runs([run({"maze": [1]})], []),
            "paired_over_runs \\(B\\): no runs",
        ),
        (
            lambda: paired_over_runs([run({"maze": [1]})] * 2, [run({"maze": [1]})]),
            "A has 2 runs and B 1",
        ),
        (
            lambda: paired_over_runs([run({"maze": [1]})], [run({"babyai": [1]})]),
            "run 0\\): A and B share no test task",
        ),
    ],
)
def test_runs_reject_bad_input_naming_it(call, message):
    # Execute / Assert
    with pytest.raises(ValueError, match=message):
        call()

"""SAGE's role rewards against hand-worked cases (seed 001, Eq. 2-13)."""

from __future__ import annotations

import pytest

from evoflow.sage import rewards as r

W = r.Weights()


@pytest.mark.parametrize(
    ("score", "mode", "expected"),
    [
        (8, "fixed", 7 / 9),  # (8 - 1) / 9 = 0.778
        (7, "fixed", 6 / 9),  # 0.667
        (10, "fixed", 1.0),
        (1, "fixed", 0.0),  # the worst score
        (1, "paper", 1.0),  # the paper's Norm: 1 falls in its [0, 1] branch
        (0.4, "paper", 0.4),
        (0.4, "fixed", 0.5),  # below the 1-10 scale
        (1.5, "paper", 0.5 / 9),
        (11, "fixed", 0.5),
        (-2, "paper", 0.5),
        (None, "fixed", 0.5),
    ],
)
def test_norm(score, mode, expected):
    assert r.norm(score, mode) == pytest.approx(expected)


def test_integer_scores_at_the_thresholds():
    # alpha = 0.7: 7 -> 0.667 is refused, 8 -> 0.778 enters the pool
    assert not r.accepted(r.norm(7), True, W) and r.accepted(r.norm(8), True, W)
    assert not r.accepted(r.norm(10), False, W)  # an invalid verifier never enters
    # beta = 0.3: a plan scored 3 (0.222) stays hidden, 4 (0.333) is shown
    assert not r.plan_shown(r.norm(3), W) and r.plan_shown(r.norm(4), W)


def test_format_score():
    tags = r.ROLE_TAGS["challenger"]
    full = "<question>2+2?</question><answer>4</answer><type>math</type>"
    assert r.format_score(full, tags) == 1.0
    assert r.format_score("<question>2+2?</question>", tags) == pytest.approx(1 / 3)
    twice = "<question>a</question><question>b</question><answer>4</answer>"
    assert r.format_score(twice, tags) == pytest.approx((0.5 + 1 + 0) / 3)
    assert r.format_score("<plan> </plan>", ("plan",)) == 0.0  # empty content
    assert r.format_score("   ", ("plan",)) == 0.5  # empty output: the paper's 0.5
    assert r.parse_score("I give it <score> 8 </score>.") == 8.0
    assert r.parse_score("eight") is None


def test_challenger_reward_both_branches():
    # joined the pool: (s_q + r_d + r_f) / 3
    s_q, r_d = r.norm(9), r.difficulty([1, 0, 0, 0])  # r_d = 0.75
    assert r.challenger(s_q, r_d, 1.0, True) == pytest.approx((8 / 9 + 0.75 + 1) / 3)
    # kept out (score, validity, a repeat): (s_q + r_f) / 2, difficulty ignored
    assert r.challenger(r.norm(7), 0.75, 0.5, False) == pytest.approx((2 / 3 + 0.5) / 2)
    assert r.challenger(1.0, 0.75, 1.0, False) == pytest.approx(1.0)
    # which questions may join: Norm(score) >= alpha and valid
    assert r.accepted(r.norm(8), True, W) and not r.accepted(r.norm(7), True, W)
    assert not r.accepted(1.0, False, W)


def test_planner_solver_and_critic_rewards():
    assert r.planner(r.norm(4), 1.0, W) == pytest.approx(0.5 * 3 / 9 + 0.5)
    # plan shown (score 4 -> 1/3): 0.2 * 1/3 + 0.6 * 1 + 0.2 * 0.5
    assert r.solver(1.0, 0.5, r.norm(4), W) == pytest.approx(0.2 / 3 + 0.6 + 0.1)
    # plan hidden (score 3): its score does not count
    assert r.solver(1.0, 0.5, r.norm(3), W) == pytest.approx(0.6 + 0.1)
    # no plan score at all: half correctness, half format
    assert r.solver(1.0, 0.5, None, W) == pytest.approx(0.75)
    assert r.critic(0.25) == 0.25


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="sum to 1"):
        r.Weights(solver=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="norm must be one of"):
        r.norm(5, "other")
    with pytest.raises(ValueError, match="at least one Solver sample"):
        r.difficulty([])

"""Advantage estimators and RL token losses against hand-worked numbers."""

from __future__ import annotations

import math

import pytest
import torch

from evoflow.train.rl import advantages as rl

T = torch.tensor


def test_grpo_normalises_within_each_group_with_the_unbiased_std():
    # group 0: mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = 0.57735; group 1 alone: A = r
    advantages = rl.grpo(T([1.0, 0.0, 0.0, 1.0, 0.5]), T([0, 0, 0, 0, 1]))
    expected = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    assert advantages.tolist() == pytest.approx(
        [expected, -expected, -expected, expected, 0.5], rel=1e-6
    )


def test_grpo_gives_zero_to_a_group_without_variance():
    advantages = rl.grpo(T([1.0, 1.0, 0.0, 0.0]), T([3, 3, 4, 4]))
    assert advantages.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert torch.isfinite(advantages).all()


def test_rloo_subtracts_the_mean_of_the_other_samples():
    # 1 - (0 + 0 + 1) / 3 and 0 - (1 + 0 + 1) / 3; a sample alone keeps r
    advantages = rl.rloo(T([1.0, 0.0, 0.0, 1.0, 0.7]), T([0, 0, 0, 0, 1]))
    assert advantages.tolist() == pytest.approx([2 / 3, -2 / 3, -2 / 3, 2 / 3, 0.7])


MASK = T([[0, 1, 1, 0, 1, 0], [1, 1, 0, 0, 0, 0]], dtype=torch.float32)


def test_the_outcome_reward_sits_on_the_last_assistant_token():
    tokens = rl.outcome_token_rewards(T([2.0, 3.0]), MASK)
    assert tokens.tolist() == [[0, 0, 0, 0, 2, 0], [0, 3, 0, 0, 0, 0]]


def test_reinforce_pp_whitens_the_return_over_the_batchs_valid_tokens():
    # returns on valid tokens: 2, 2, 2 and 3, 3; mean 2.4, unbiased var 0.3
    advantages = rl.reinforce_pp(rl.outcome_token_rewards(T([2.0, 3.0]), MASK), MASK)
    low, high = -0.4 / math.sqrt(0.3 + 1e-8), 0.6 / math.sqrt(0.3 + 1e-8)
    assert advantages.tolist() == [
        pytest.approx([0, low, low, 0, low, 0], abs=1e-6),
        pytest.approx([high, high, 0, 0, 0, 0], abs=1e-6),
    ]


def test_task_relative_whitens_each_group_apart():
    # rows 0, 2 form group "a" (returns 2, 2, 2 | 4), rows 1, 3 group "b" (3, 3 | 3, 3)
    mask = torch.cat([MASK, T([[0, 0, 0, 0, 0, 1], [1, 0, 0, 1, 0, 0]])]).float()
    groups = T([0, 1, 0, 1])
    tokens = rl.outcome_token_rewards(T([2.0, 3.0, 4.0, 3.0]), mask)
    advantages = rl.task_relative(tokens, mask, groups)
    # group a: returns 2, 2, 2, 4 -> mean 2.5, unbiased var 1.0
    low, high = -0.5 / math.sqrt(1 + 1e-8), 1.5 / math.sqrt(1 + 1e-8)
    assert advantages[0].tolist() == pytest.approx([0, low, low, 0, low, 0], abs=1e-6)
    assert advantages[2].tolist() == pytest.approx([0, 0, 0, 0, 0, high], abs=1e-6)
    # group b: every return 3 -> zero advantage, no division by zero
    assert advantages[[1, 3]].abs().sum() == 0
    # the other group's rewards never move a group's advantages
    moved = rl.outcome_token_rewards(T([2.0, 9.0, 4.0, 1.0]), mask)
    again = rl.task_relative(moved, mask, groups)
    assert torch.equal(again[[0, 2]], advantages[[0, 2]])


def test_gae_skips_observation_tokens():
    # tokens 0 and 2 are the agent's, token 1 an observation (its value unused)
    rewards, values, mask = (
        T([[0.0, 0.0, 1.0]]),
        T([[0.5, 9.0, 0.8]]),
        T([[1.0, 0.0, 1.0]]),
    )
    # t=2: δ = 1 - 0.8 = 0.2; t=0: δ = 0 + 0.8 - 0.5 = 0.3, A = 0.3 + λ·0.2
    advantages, returns = rl.gae(rewards, values, mask, gamma=1.0, lam=1.0)
    assert advantages.tolist()[0] == pytest.approx([0.5, 0.0, 0.2])
    assert returns.tolist()[0] == pytest.approx([1.0, 0.0, 1.0])
    advantages, _ = rl.gae(rewards, values, mask, gamma=1.0, lam=0.5)
    assert advantages.tolist()[0] == pytest.approx([0.4, 0.0, 0.2])


def test_low_variance_kl():
    assert rl.low_var_kl(T([-1.0]), T([-1.0])).item() == 0.0
    # k = -2 - (-1) = -1: e^-1 + 1 - 1
    assert rl.low_var_kl(T([-1.0]), T([-2.0])).item() == pytest.approx(math.exp(-1))
    assert rl.low_var_kl(T([0.0]), T([50.0])).item() == 10.0  # clamped


def test_low_variance_kl_has_finite_gradients_across_a_100_nat_gap():
    logp = T([0.0, -100.0]).requires_grad_()
    ref = T([-100.0, 0.0])  # e^100 overflows fp32 without the clamp before exp
    kl = rl.low_var_kl(logp, ref)
    kl.sum().backward()
    assert kl.tolist() == [10.0, 10.0]  # both past the outer clamp
    assert torch.isfinite(logp.grad).all()


def test_clipped_policy_loss():
    mask = T([[1.0]])
    logp, old = T([[0.5]]), T([[0.0]])  # ratio e^0.5 = 1.65, beyond 1 + 0.2
    loss, clipped = rl.clipped_policy_loss(logp, old, T([[1.0]]), mask)
    assert (loss.item(), clipped.item()) == (pytest.approx(-1.2), 1.0)
    loss, clipped = rl.clipped_policy_loss(logp, old, T([[-1.0]]), mask)
    assert (loss.item(), clipped.item()) == (pytest.approx(math.exp(0.5)), 0.0)


def test_gigpo_adds_step_credit_within_anchor_states_worked_by_hand():
    # One task, two trajectories (γ = 0.5, ω = 1): the first meets states A, B
    # and wins (reward 1), the second meets A, D and loses. Episode level
    # (GRPO): ±0.5 / std(1, 0) = ±1/√2. Step returns: A → 0.5 (one step
    # before the win) and 0; B → 1 and D → 0 are states met once (A^S = 0).
    # State A's group {0.5, 0} normalises to ±1/√2. A third trajectory, alone
    # in its task, also meets "A": a different task's group, not pooled.
    # Rows: the first trajectory as one row of two turns, the second as one
    # row per turn, the third one row.
    mask = torch.tensor([[0, 1, 1, 0, 1, 0], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1],
                         [0, 1, 1, 0, 0, 0]], dtype=torch.float32)  # fmt: skip
    trajectory = torch.tensor([0, 1, 1, 2])
    rewards, groups = torch.tensor([1.0, 0.0, 1.0]), torch.tensor([0, 0, 1])
    anchors = [["A", "B"], ["A", "D"], ["A"]]
    advantages, returns = rl.ESTIMATORS["gigpo"](rewards, groups, trajectory, mask, None,
                                                 0.5, 1.0, anchors=anchors, omega=1.0)  # fmt: skip
    h = 1 / math.sqrt(2)
    expected = torch.tensor([[0, 2 * h, 2 * h, 0, h, 0], [0, -2 * h, 0, 0, 0, 0],
                             [0, 0, 0, 0, -h, -h], [0, 1, 1, 0, 0, 0]])  # fmt: skip
    torch.testing.assert_close(advantages, expected, atol=1e-5, rtol=0)
    assert returns is None
    # without anchor states every step is its own: GiGPO is GRPO
    plain, _ = rl.ESTIMATORS["gigpo"](rewards, groups, trajectory, mask, None, 0.5, 1.0)
    grpo, _ = rl.ESTIMATORS["grpo"](rewards, groups, trajectory, mask, None, 0.5, 1.0)
    torch.testing.assert_close(plain, grpo)


def test_gigpo_names_a_trajectory_with_too_few_anchor_states():
    mask = torch.tensor([[0, 1, 0, 1]], dtype=torch.float32)
    with pytest.raises(ValueError, match="2 steps but 1 anchor"):
        rl.ESTIMATORS["gigpo"](torch.tensor([1.0]), torch.tensor([0]), torch.tensor([0]),
                               mask, None, 0.9, 1.0, anchors=[["A"]])  # fmt: skip

"""Advantage estimators and the token losses of multi-turn RL, as pure functions.

Shapes: ``rewards`` is one outcome reward per trajectory ``[B]``; ``groups``
the id of the task each trajectory sampled ``[B]`` (GRPO / RLOO groups);
token tensors are ``[B, T]`` with ``mask`` 1 on the assistant tokens that
train (observations and padding 0). The outcome reward sits on the last
assistant token of its trajectory (AgentGym-RL's layout). Formulas follow
veRL as AgentGym-RL uses it (``../shared/FACTS.md``):

* GRPO: A_i = (r_i − mean_g) / (std_g + ε), unbiased std, ε = 1e-6; a group of
  one has mean 0 and std 1 (A = r); a group whose rewards are all equal gets 0.
* RLOO: A_i = r_i − mean of the other samples of its group (r_i alone: A = r).
* REINFORCE++: return G_t = Σ_{k≥t} r_k (γ = 1) of the token rewards, whitened
  over every valid token of the batch.
* Task-relative REINFORCE++ (SAGE): the same returns, whitened within each
  group's tokens only (SAGE's groups are its roles; the public code applies
  veRL's REINFORCE++ estimator to each role's batch separately).
* PPO: GAE over token rewards and values (γ, λ); the trainer whitens the
  advantages over the batch's valid tokens, as veRL and OpenRLHF do.
* GiGPO (Feng et al., 2025, verl-agent): A = A^E + ω·A^S per step. A^E is
  GRPO's episode advantage; A^S groups the steps of one task's trajectories
  by their anchor state (identical states, the observation text by default)
  and normalises each step's discounted return γ^(T−1−t)·R within its state
  group, (R_t − mean) / (std + ε); a state met once has A^S = 0.

Trajectory advantages are broadcast to their assistant tokens by
:func:`broadcast`. ``ESTIMATORS`` is the one registry of estimators: name →
a function of (rewards, groups, trajectory, mask, values, γ, λ, and keyword
context an estimator may use: GiGPO's ``anchors`` and ``omega``) giving the
``[N, L]`` token advantages of a batch of turn rows (``trajectory`` indexes
``rewards`` and ``groups`` per row) and PPO's returns (None for the others).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

EPS = 1e-6
KL_CLAMP = 10.0
LOG_RATIO_CLAMP = 20.0  # nats, before exp (veRL's): no inf, so no NaN gradient


def _by_group(groups: torch.Tensor) -> list[torch.Tensor]:
    return [torch.nonzero(groups == g).flatten() for g in torch.unique(groups)]


def grpo(rewards: torch.Tensor, groups: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """Group-normalised outcome advantages, one per trajectory."""
    rewards = rewards.to(torch.float64)
    advantages = torch.empty_like(rewards)
    for members in _by_group(groups):
        r = rewards[members]
        if len(members) == 1:
            mean = torch.zeros((), device=r.device)
            std = torch.ones((), device=r.device)
        else:
            mean, std = r.mean(), r.std(unbiased=True)
        advantages[members] = (r - mean) / (std + eps)
    return advantages.to(torch.float32)


def rloo(rewards: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """Leave-one-out advantages: each reward minus the mean of its group's others."""
    rewards = rewards.to(torch.float64)
    advantages = rewards.clone()
    for members in _by_group(groups):
        n = len(members)
        if n > 1:
            r = rewards[members]
            advantages[members] = r - (r.sum() - r) / (n - 1)
    return advantages.to(torch.float32)


def outcome_token_rewards(rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, T]`` zeros with each trajectory's reward on its last masked token."""
    token_rewards = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(mask.bool(), positions, -1).max(dim=1).values
    rows = torch.nonzero(last >= 0).flatten()
    token_rewards[rows, last[rows]] = rewards[rows].to(torch.float32)
    return token_rewards


def masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(values − mean) / sqrt(var + 1e-8) over the masked entries (unbiased var)."""
    mask = mask.to(values.dtype)
    n = mask.sum()
    mean = (values * mask).sum() / n
    var = (((values - mean) ** 2) * mask).sum() / (n - 1).clamp(min=1)
    return (values - mean) * torch.rsqrt(var + 1e-8) * mask


def reinforce_pp(token_rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Whitened reward-to-go (γ = 1) of every valid token, ``[B, T]``."""
    masked = token_rewards * mask
    returns = masked.flip(1).cumsum(1).flip(1)
    return masked_whiten(returns, mask)


def task_relative(
    token_rewards: torch.Tensor, mask: torch.Tensor, groups: torch.Tensor
) -> torch.Tensor:
    """REINFORCE++ whitened per group: row ``i`` of ``[B, T]`` is whitened with
    the rows of group ``groups[i]`` only, so one group's rewards never move
    another's advantages; a group whose returns are all equal gets zeros."""
    advantages = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    for members in _by_group(groups):
        advantages[members] = reinforce_pp(token_rewards[members], mask[members])
    return advantages


def gae(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimates and returns over the masked tokens.

    Unmasked tokens (observations) are skipped: the next value of a token is the
    value of the next *masked* token of its trajectory (0 after the last one).
    """
    batch, length = mask.shape
    advantages = values.new_zeros(batch, length)
    next_value = values.new_zeros(batch)
    running = values.new_zeros(batch)
    for t in reversed(range(length)):
        on = mask[:, t].bool()
        delta = token_rewards[:, t] + gamma * next_value - values[:, t]
        running = torch.where(on, delta + gamma * lam * running, running)
        advantages[:, t] = torch.where(on, running, torch.zeros_like(running))
        next_value = torch.where(on, values[:, t], next_value)
    return advantages, (advantages + values) * mask


def broadcast(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-trajectory advantages on every masked token, ``[B, T]``."""
    return advantages[:, None].to(torch.float32) * mask


def low_var_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(π_θ ‖ π_ref) per token: e^k − k − 1, k = ref − θ
    clamped to [−20, 20] before ``exp``, the result clamped to [−10, 10]."""
    k = (ref_logp - logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return (torch.exp(k) - k - 1).clamp(-KL_CLAMP, KL_CLAMP)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum().clamp(min=1)


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip: float = 0.2,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate (masked token mean) and the clipped fraction."""
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1 - clip, 1 + clip) * advantages
    loss = masked_mean(-torch.minimum(unclipped, clipped), mask)
    fraction = masked_mean((clipped < unclipped).to(logp.dtype), mask)
    return loss, fraction


def normalise_within(values: torch.Tensor, groups: torch.Tensor, eps: float = EPS):
    """(v − group mean) / (group's unbiased std + ε); 0 in a group of one."""
    values = values.to(torch.float64)
    out = torch.zeros_like(values)
    for members in _by_group(groups):
        if len(members) > 1:
            group = values[members]
            out[members] = (group - group.mean()) / (group.std() + eps)
    return out.to(torch.float32)


def step_index(mask: torch.Tensor, trajectory: torch.Tensor) -> torch.Tensor:
    """``[N, L]`` the number of each generated token's step (turn) within its
    trajectory, −1 off the mask: a trajectory's rows in order, each row's
    runs of masked tokens one step each."""
    index = torch.full(mask.shape, -1, dtype=torch.long, device=mask.device)
    for t in trajectory.unique():
        count = 0
        for row in (trajectory == t).nonzero()[:, 0].tolist():
            on = mask[row].bool()
            starts = on & ~torch.nn.functional.pad(on[:-1], (1, 0))
            steps = count + starts.long().cumsum(0) - 1
            index[row] = torch.where(on, steps, index[row])
            count += int(starts.sum())
    return index


def gigpo(rewards: torch.Tensor, groups: torch.Tensor, step_trajectory: torch.Tensor,
          step_number: torch.Tensor, step_count: torch.Tensor, anchors: torch.Tensor,
          gamma: float, omega: float = 1.0) -> torch.Tensor:  # fmt: skip
    """GiGPO's advantage of each step ``[S]``: step s is number
    ``step_number[s]`` of ``step_count[s]`` in trajectory
    ``step_trajectory[s]``, its anchor state ``anchors[s]`` (an id; steps of
    the same task's group with equal ids share a state)."""
    episode = grpo(rewards, groups)[step_trajectory]
    exponent = (step_count - 1 - step_number).to(torch.float64)
    returns = rewards.to(torch.float64)[step_trajectory] * gamma**exponent
    _, key = torch.unique(torch.stack([groups[step_trajectory], anchors]), dim=1,
                          return_inverse=True)  # fmt: skip
    return episode + omega * normalise_within(returns, key)


def _gigpo(rewards, groups, trajectory, mask, values, gamma, lam, anchors=None,
           omega=1.0, **_):  # fmt: skip
    """Per-step GiGPO advantages on each step's tokens; ``anchors`` lists,
    per trajectory, one state id per step (None: every step its own state,
    so GiGPO is GRPO)."""
    index = step_index(mask, trajectory)
    rows, cols = (index >= 0).nonzero(as_tuple=True)
    pairs = torch.stack([trajectory[rows], index[rows, cols]])
    steps, where = torch.unique(pairs, dim=1, return_inverse=True)
    counts = torch.zeros(len(rewards), dtype=torch.long, device=mask.device)
    counts.scatter_reduce_(0, steps[0], steps[1] + 1, reduce="amax")
    if anchors is None:
        ids = torch.arange(steps.shape[1], device=mask.device)
    else:
        ids = _anchor_ids(anchors, steps, mask.device)
    per_step = gigpo(
        rewards, groups, steps[0], steps[1], counts[steps[0]], ids, gamma, omega
    )
    advantages = torch.zeros_like(mask)
    advantages[rows, cols] = per_step[where]
    return advantages, None


def _anchor_ids(anchors: list[list], steps: torch.Tensor, device) -> torch.Tensor:
    """An integer id per step from its trajectory's list of state keys."""
    codes: dict = {}
    ids = []
    counts: dict[int, int] = {}
    for t, n in steps.T.tolist():
        counts[t] = n + 1
        ids.append(
            codes.setdefault(anchors[t][n] if n < len(anchors[t]) else None, len(codes))
        )
    for t, n in counts.items():
        if n != len(anchors[t]):
            raise ValueError(f"trajectory {t} has {n} steps but {len(anchors[t])} "
                             "anchor states")  # fmt: skip
    return torch.tensor(ids, device=device)


def _grpo(rewards, groups, trajectory, mask, values, gamma, lam, **_):
    return broadcast(grpo(rewards, groups)[trajectory], mask), None


def _rloo(rewards, groups, trajectory, mask, values, gamma, lam, **_):
    return broadcast(rloo(rewards, groups)[trajectory], mask), None


def _reinforce_pp(rewards, groups, trajectory, mask, values, gamma, lam, **_):
    """Each turn's row ends on its trajectory's reward; γ = 1 returns."""
    return reinforce_pp(outcome_token_rewards(rewards[trajectory], mask), mask), None


def _task_relative(rewards, groups, trajectory, mask, values, gamma, lam, **_):
    """Whitened within each group (SAGE: role)."""
    token_rewards = outcome_token_rewards(rewards[trajectory], mask)
    return task_relative(token_rewards, mask, groups[trajectory]), None


def _ppo(rewards, groups, trajectory, mask, values, gamma, lam, **_):
    """GAE over each trajectory's generated tokens, its turns concatenated in
    order and the reward on the last one; the advantages whitened over the
    batch's generated tokens (veRL's ``compute_gae_advantage_return``), the
    returns raw."""
    if values is None:
        raise ValueError("ppo needs the critic's values")
    advantages, returns = torch.zeros_like(mask), torch.zeros_like(mask)
    for t in trajectory.unique():
        rows = (trajectory == t).nonzero()[:, 0]  # turns, in order
        where = mask[rows].bool()
        flat_values = values[rows][where][None]
        flat_mask = torch.ones_like(flat_values)
        token_rewards = outcome_token_rewards(rewards[t : t + 1], flat_mask)
        adv, ret = gae(token_rewards, flat_values, flat_mask, gamma, lam)
        sub_adv, sub_ret = advantages[rows], returns[rows]
        sub_adv[where], sub_ret[where] = adv[0], ret[0]
        advantages[rows], returns[rows] = sub_adv, sub_ret
    return masked_whiten(advantages, mask), returns


Estimator = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]
ESTIMATORS: dict[str, Estimator] = {
    "grpo": _grpo,
    "reinforce_pp": _reinforce_pp,
    "rloo": _rloo,
    "ppo": _ppo,
    "task_relative": _task_relative,
    "gigpo": _gigpo,
}

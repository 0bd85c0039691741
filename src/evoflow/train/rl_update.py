"""One RL update of a LoRA policy on a batch of scored episodes.

The policy is the base model with a trainable LoRA; the reference for the KL
term is the same model with the adapter disabled (no second copy). The loss is
PPO's clipped surrogate on the sampling log-probs stored with the episodes,
plus ``kl_coef`` × the low-variance KL to the reference and minus
``entropy_coef`` × the entropy, all as masked means over generated tokens.
GRPO, RLOO and REINFORCE++ are supported here; PPO's value head comes with
the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evoflow.train import rl_advantages as rl
from evoflow.train.rl_config import RLConfig
from evoflow.train.rl_data import (
    RLBatch,
    collate,
    next_token_logprobs,
    picked,
    token_logprobs,
)


@dataclass(frozen=True)
class UpdateStats:
    loss: float
    kl: float
    entropy: float
    clip_fraction: float
    tokens: int


def token_advantages(batch: RLBatch, rewards: torch.Tensor, groups: torch.Tensor,
                     estimator: str) -> torch.Tensor:  # fmt: skip
    """``[N, L]`` advantages of every generated token of the batch's turns.

    ``rewards`` and ``groups`` are per trajectory (``batch.trajectory`` indexes
    them). With an outcome reward and γ = 1, REINFORCE++'s return is the
    trajectory's reward on each of its tokens, whitened over all of them.
    """
    if estimator == "grpo":
        per_trajectory = rl.grpo(rewards, groups)
    elif estimator == "rloo":
        per_trajectory = rl.rloo(rewards, groups)
    elif estimator == "reinforce_pp":  # each turn's row ends on its trajectory's reward
        token_rewards = rl.outcome_token_rewards(
            rewards[batch.trajectory], batch.loss_mask
        )
        return rl.reinforce_pp(token_rewards, batch.loss_mask)
    else:
        raise ValueError(f"estimator {estimator!r} needs the trainer (value head)")
    return rl.broadcast(per_trajectory[batch.trajectory], batch.loss_mask)


def update(model, optimizer, batch: RLBatch, advantages: torch.Tensor,
           config: RLConfig) -> UpdateStats:  # fmt: skip
    """Gradient steps over ``batch`` in micro-batches (one optimizer step per
    pass; ``config.update_epochs`` passes)."""
    totals = torch.zeros(4)
    rows = torch.arange(batch.input_ids.shape[0])
    tokens = batch.loss_mask.sum().clamp(min=1)
    for _ in range(config.update_epochs):
        optimizer.zero_grad(set_to_none=True)
        for chunk in rows.split(config.micro_batch):
            part = _select(batch, chunk)
            loss, parts = _loss(model, part, advantages[chunk], config)
            weight = part.loss_mask.sum() / tokens  # token mean over the batch
            (loss * weight).backward()
            totals += torch.stack([loss.detach(), *parts]) * weight
        torch.nn.utils.clip_grad_norm_(
            [p for p in model.parameters() if p.requires_grad], config.max_grad_norm
        )
        optimizer.step()
    totals /= config.update_epochs
    return UpdateStats(*totals.tolist(), tokens=int(tokens))


def _loss(model, batch: RLBatch, advantages: torch.Tensor, config: RLConfig):
    logp_all = next_token_logprobs(model, batch)
    logp = picked(logp_all, batch)
    entropy = torch.nn.functional.pad(-(logp_all.exp() * logp_all).sum(-1), (1, 0))
    mask = batch.loss_mask
    loss, clipped = rl.clipped_policy_loss(
        logp, batch.old_logprobs, advantages, mask, config.clip
    )
    kl = torch.zeros(())
    if config.kl_coef > 0:
        with torch.no_grad(), model.disable_adapter():
            ref = token_logprobs(model, batch)
        kl = rl.masked_mean(rl.low_var_kl(logp, ref), mask)
    mean_entropy = rl.masked_mean(entropy, mask)
    total = loss + config.kl_coef * kl - config.entropy_coef * mean_entropy
    return total, (kl.detach(), mean_entropy.detach(), clipped.detach())


def _select(batch: RLBatch, rows: torch.Tensor) -> RLBatch:
    return RLBatch(batch.input_ids[rows], batch.attention_mask[rows],
                   batch.loss_mask[rows], batch.old_logprobs[rows],
                   batch.trajectory[rows])  # fmt: skip


__all__ = ["UpdateStats", "collate", "token_advantages", "update"]

"""One RL update of a LoRA policy on a batch of scored episodes.

The policy is the base model with a trainable LoRA; the reference for the KL
term is the same model with the adapter disabled or a frozen second adapter
(``evoflow.train.rl.reference``; never a second copy of the model). The loss is
PPO's clipped surrogate against old log-probs from the training model (as
AgentGym-RL does: the rollout backend's own, vLLM in bf16 say, would differ from
the trainer's forward and be clipped away) — read off the loss forward itself
in a single pass, recomputed before the first of several,
plus ``kl_coef`` × the low-variance KL to the reference (a loss term, as veRL
does for GRPO; not a reward penalty) and minus ``entropy_coef`` × the entropy,
all as masked means over generated tokens.

PPO's critic is a linear value head on the policy's last hidden states
(``ValueHead``). It reads them detached, so the critic's loss trains the head
only and never pulls the shared LoRA trunk; its value loss is clipped around
the old values as veRL's (``value_clip`` 0.5).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from evoflow.train.rl import advantages as rl
from evoflow.train.rl import reference as rl_reference
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.data import RLBatch, collate, shared_opening, token_stats


@dataclass(frozen=True)
class UpdateStats:
    loss: float
    kl: float
    entropy: float
    clip_fraction: float
    value_loss: float
    tokens: int


class ValueHead(torch.nn.Module):
    """V(s) from the last hidden state before a token: one linear layer."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """``[N, L]`` values aligned with tokens (position p: the state before
        token p; 0 at position 0)."""
        values = self.linear(hidden[:, :-1].detach().float())[..., 0]
        return torch.nn.functional.pad(values, (1, 0))


def token_advantages(batch: RLBatch, rewards: torch.Tensor, groups: torch.Tensor,
                     estimator: str, values: torch.Tensor | None = None,
                     gamma: float = 1.0, lam: float = 1.0, **context):  # fmt: skip
    """``[N, L]`` advantages of every generated token, and PPO's returns.

    ``rewards`` and ``groups`` are per trajectory (``batch.trajectory`` indexes
    them). With an outcome reward and γ = 1, REINFORCE++'s return is the
    trajectory's reward on each of its tokens, whitened over all of them. PPO
    runs GAE over each trajectory's generated tokens in turn order, the reward
    on the last one (``values``: the critic's, aligned with the batch), and
    whitens the advantages over the batch's generated tokens (veRL's
    ``compute_gae_advantage_return``); the returns stay raw.
    GiGPO reads ``context``: ``anchors`` (per trajectory, one state key per
    step) and ``omega`` (the step-level weight).
    Returns ``(advantages, returns)``; ``returns`` is None except for PPO.
    """
    if estimator not in rl.ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}")
    return rl.ESTIMATORS[estimator](rewards, groups, batch.trajectory, batch.loss_mask,
                                    values, gamma, lam, **context)  # fmt: skip


def update(model, optimizer, batch: RLBatch, advantages: torch.Tensor,
           config: RLConfig, dtype: torch.dtype = torch.float32,
           critic: ValueHead | None = None,
           returns: torch.Tensor | None = None,
           old_values: torch.Tensor | None = None,
           reference: str | None = None) -> UpdateStats:  # fmt: skip
    """Gradient steps over ``batch`` in micro-batches (one optimizer step per
    pass; ``config.update_epochs`` passes). ``dtype``: autocast compute dtype.
    With a ``critic`` (PPO), ``optimizer`` also holds its parameters;
    ``reference`` names the frozen KL-reference adapter (None: the base).

    The ratio's old log-probs are the training model's, never the rollout
    backend's. With one pass the model has not moved when any micro-batch's
    loss is taken, so they are that loss forward's own log-probs, detached —
    what a separate forward before the pass would give, one forward fewer per
    sequence. With more passes, or dropout in the model (the separate forward
    runs without it), they are recomputed first."""
    device = batch.input_ids.device
    totals = torch.zeros(5, device=device)
    chunks = micro_batches(batch, config.micro_batch, config.micro_tokens)
    tokens = batch.loss_mask.sum().clamp(min=1)
    own_old = config.update_epochs == 1 and not _dropout(model)
    if not own_old:
        batch = recompute_old_logprobs(model, batch, dtype, chunks)
    for _ in range(config.update_epochs):
        optimizer.zero_grad(set_to_none=True)
        for chunk in chunks:
            part = _select(batch, chunk)
            width = part.input_ids.shape[1]
            value_target = None
            if critic is not None:
                value_target = (returns[chunk, :width], old_values[chunk, :width])
            loss, parts = _loss(model, part, advantages[chunk, :width], config, dtype,
                                critic, value_target, reference, own_old)  # fmt: skip
            weight = part.loss_mask.sum() / tokens  # token mean over the batch
            (loss * weight).backward()
            totals += torch.stack([loss.detach(), *parts]) * weight
        for group in optimizer.param_groups:  # policy and critic clipped apart
            torch.nn.utils.clip_grad_norm_(group["params"], config.max_grad_norm)
        optimizer.step()
    totals /= config.update_epochs
    return UpdateStats(*totals.tolist(), tokens=int(tokens))


def _dropout(model) -> bool:
    """Whether anything in ``model`` drops in training mode: a dropout module
    (LoRA's) or the attention's own dropout rate."""
    if getattr(getattr(model, "config", None), "attention_dropout", 0.0):
        return True
    return any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())


def recompute_old_logprobs(model, batch: RLBatch, dtype,
                           chunks: list[torch.Tensor]) -> RLBatch:  # fmt: skip
    """The batch with ``old_logprobs`` from ``model`` as it is now (no
    gradient, no dropout, in the micro-batches ``chunks`` (row indices), at
    each row's temperature)."""
    logprobs, training = torch.zeros_like(batch.old_logprobs), model.training
    model.eval()
    try:
        with torch.no_grad():
            for rows in chunks:
                part = token_stats(model, _select(batch, rows), dtype).logprobs
                logprobs[rows, : part.shape[1]] = part
    finally:
        model.train(training)
    return replace(batch, old_logprobs=logprobs)


def micro_batches(batch: RLBatch, rows: int, tokens: int = 0) -> list[torch.Tensor]:
    """Row indices of each micro-batch: rows that open alike side by side (a
    task's samples read their common opening once, ``data.last_hidden``), at
    most ``rows`` of them and, with ``tokens``, as many as read at most that
    many tokens — the opening once, then each row's own (a longer row goes
    alone)."""
    keys = batch.input_ids.tolist()
    chunks: list[list[int]] = []
    for row in sorted(range(len(keys)), key=keys.__getitem__):
        chunk = chunks[-1] if chunks else []
        fits = 0 < len(chunk) < rows and (
            not tokens or tokens_read(batch, chunk + [row]) <= tokens
        )
        if fits:
            chunk.append(row)
        else:
            chunks.append([row])
    device = batch.input_ids.device
    return [torch.tensor(c, dtype=torch.long, device=device) for c in chunks]


def tokens_read(batch: RLBatch, rows: list[int]) -> int:
    """Tokens a forward over ``rows`` reads: their common opening once (when
    it is long enough to share), then each row's own."""
    lengths = batch.attention_mask[rows].sum(dim=1).tolist()
    shared = shared_opening(batch.input_ids[rows])
    return shared + sum(n - shared for n in lengths)


def values_of(model, batch: RLBatch, dtype, critic: ValueHead) -> torch.Tensor:
    """The critic's ``[N, L]`` values (no gradient)."""
    with torch.no_grad():
        return critic(token_stats(model, batch, dtype).hidden)


def _loss(model, batch: RLBatch, advantages, config: RLConfig, dtype, critic,
          value_target, reference=None, own_old=False):  # fmt: skip
    ref = None  # before the policy's forward: switching adapters toggles grads
    if config.kl_coef > 0:
        ref = rl_reference.logprobs(model, batch, dtype, reference)
    stats = token_stats(model, batch, dtype, entropy=True)
    mask = batch.loss_mask
    old = stats.logprobs.detach() if own_old else batch.old_logprobs
    loss, clipped = rl.clipped_policy_loss(
        stats.logprobs, old, advantages, mask, config.clip
    )
    kl = mask.new_zeros(())
    if ref is not None:
        kl = rl.masked_mean(rl.low_var_kl(stats.logprobs, ref), mask)
    mean_entropy = rl.masked_mean(stats.entropy, mask)
    total = loss + config.kl_coef * kl - config.entropy_coef * mean_entropy
    value_loss = mask.new_zeros(())
    if critic is not None:
        returns, old_values = value_target
        values = critic(stats.hidden)
        value_loss = _value_loss(values, old_values, returns, mask, config.value_clip)
        total = total + value_loss
    parts = (kl, mean_entropy, clipped, value_loss)
    return total, tuple(p.detach() for p in parts)


def _value_loss(values, old_values, returns, mask, clip: float) -> torch.Tensor:
    """veRL's clipped value loss: ½ max((V − R)², (clip(V, V_old ± c) − R)²)."""
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    worst = torch.maximum((values - returns) ** 2, (clipped - returns) ** 2)
    return 0.5 * rl.masked_mean(worst, mask)


def _select(batch: RLBatch, rows: torch.Tensor) -> RLBatch:
    """The ``rows`` of ``batch``, cut to the longest of them: a micro-batch
    reads no column that is padding in all its rows."""
    width = int(batch.attention_mask[rows].sum(dim=1).max())
    temperature = None if batch.temperature is None else batch.temperature[rows]
    return RLBatch(batch.input_ids[rows, :width], batch.attention_mask[rows, :width],
                   batch.loss_mask[rows, :width], batch.old_logprobs[rows, :width],
                   batch.trajectory[rows], temperature)  # fmt: skip


__all__ = ["UpdateStats", "ValueHead", "collate", "token_advantages", "update",
           "values_of"]  # fmt: skip

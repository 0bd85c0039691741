"""Episodes as RL training sequences, token for token as they were sampled.

Each assistant turn becomes one sequence: the chat before it rendered as the
policy rendered it to answer (``prompt_ids``, with the reply format's template
options) followed by the token ids the policy generated. Only those generated
tokens train (observations, the system prompt and earlier turns are context),
and their stored sampling log-probs line up with them exactly — no
re-tokenisation of text. A trajectory's turns share its reward and advantage.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evoflow.envs.formats import NO_THINKING
from evoflow.policy.base import prompt_ids
from evoflow.store.schema import Episode


@dataclass(frozen=True)
class TurnSequence:
    input_ids: list[int]  # prompt, then the generated tokens
    start: int  # index of the first generated token
    old_logprobs: list[float]  # one per generated token
    trajectory: int  # index of the episode in the batch


@dataclass
class RLBatch:
    """Right-padded sequences; ``loss_mask`` and ``old_logprobs`` are aligned
    with ``input_ids`` (position p holds token p's values)."""

    input_ids: torch.Tensor  # [N, L]
    attention_mask: torch.Tensor  # [N, L]
    loss_mask: torch.Tensor  # [N, L] 1 on generated tokens
    old_logprobs: torch.Tensor  # [N, L]
    trajectory: torch.Tensor  # [N]


def turn_sequences(
    tokenizer, episodes: list[Episode], template=NO_THINKING
) -> list[TurnSequence]:
    """Every generated assistant turn of ``episodes`` as a sequence.

    Raises ``ValueError`` naming the episode when a turn lacks token ids or
    log-probs (a backend that does not report them cannot feed RL).
    """
    sequences = []
    for index, episode in enumerate(episodes):
        for k, message in enumerate(episode.messages):
            if message.role != "assistant" or message.loss is False:
                continue
            if not message.token_ids or message.logprobs is None:
                raise ValueError(
                    f"episode {episode.episode_id}: assistant turn {k} has no "
                    "token ids / log-probs (RL needs the sampled tokens)"
                )
            chat = [
                {"role": m.role, "content": m.content} for m in episode.messages[:k]
            ]
            prompt = prompt_ids(tokenizer, chat, template)
            sequences.append(
                TurnSequence(
                    prompt + list(message.token_ids),
                    len(prompt),
                    list(message.logprobs),
                    index,
                )  # fmt: skip
            )
    return sequences


def collate(sequences: list[TurnSequence], pad_id: int) -> RLBatch:
    length = max(len(s.input_ids) for s in sequences)
    n = len(sequences)
    batch = RLBatch(
        input_ids=torch.full((n, length), pad_id, dtype=torch.long),
        attention_mask=torch.zeros(n, length, dtype=torch.long),
        loss_mask=torch.zeros(n, length),
        old_logprobs=torch.zeros(n, length),
        trajectory=torch.tensor([s.trajectory for s in sequences]),
    )
    for row, s in enumerate(sequences):
        size, generated = len(s.input_ids), len(s.input_ids) - s.start
        batch.input_ids[row, :size] = torch.tensor(s.input_ids)
        batch.attention_mask[row, :size] = 1
        batch.loss_mask[row, s.start : size] = 1
        batch.old_logprobs[row, s.start : size] = torch.tensor(
            s.old_logprobs[:generated]
        )
    return batch


@dataclass(frozen=True)
class TokenStats:
    """Per-position values at generated tokens (0 elsewhere), each ``[N, L]``."""

    logprobs: torch.Tensor  # log π(token_p | tokens_<p)
    entropy: torch.Tensor | None  # entropy of the distribution token p came from
    hidden: torch.Tensor  # last hidden states [N, L, H] (for a value head)


def token_stats(model, batch: RLBatch, dtype=torch.float32, entropy: bool = False
                ) -> TokenStats:  # fmt: skip
    """One forward pass; the LM head runs only where a generated token is read.

    Rows are right-padded and no attention mask is passed: under causal
    attention a real token never sees the padding after it. ``dtype`` is the
    autocast compute dtype; log-probs come out in fp32.
    """
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    device_type = batch.input_ids.device.type
    read = batch.loss_mask[:, 1:].bool()  # token p is read from position p - 1
    with torch.autocast(device_type, dtype=dtype, enabled=dtype != torch.float32):
        hidden = inner.get_decoder()(input_ids=batch.input_ids).last_hidden_state
        logits = inner.get_output_embeddings()(hidden[:, :-1][read])
    logp_all = torch.log_softmax(logits.float(), dim=-1)
    chosen = logp_all.gather(-1, batch.input_ids[:, 1:][read][:, None])[:, 0]
    logprobs = _scatter(chosen, read)
    spread = None
    if entropy:
        spread = _scatter(-(logp_all.exp() * logp_all).sum(-1), read)
    return TokenStats(logprobs, spread, hidden)


def _scatter(values: torch.Tensor, read: torch.Tensor) -> torch.Tensor:
    """Values read at positions p - 1 placed at p, zeros elsewhere, ``[N, L]``."""
    out = torch.zeros(read.shape[0], read.shape[1] + 1, dtype=values.dtype,
                      device=values.device)  # fmt: skip
    out[:, 1:][read] = values
    return out


def token_logprobs(model, batch: RLBatch, dtype=torch.float32) -> torch.Tensor:
    """log π(token_p | tokens_<p) at generated positions (0 elsewhere), [N, L]."""
    return token_stats(model, batch, dtype).logprobs

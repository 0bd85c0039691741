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


def next_token_logprobs(model, batch: RLBatch) -> torch.Tensor:
    """Log-softmax over the vocabulary after every position but the last, [N, L-1, V]."""
    logits = model(
        input_ids=batch.input_ids, attention_mask=batch.attention_mask
    ).logits
    return torch.log_softmax(logits[:, :-1].float(), dim=-1)


def picked(logp_all: torch.Tensor, batch: RLBatch) -> torch.Tensor:
    """log π(token_p | tokens_<p) at every position (0 at position 0), [N, L]."""
    chosen = logp_all.gather(-1, batch.input_ids[:, 1:, None])[..., 0]
    return torch.nn.functional.pad(chosen, (1, 0))


def token_logprobs(model, batch: RLBatch) -> torch.Tensor:
    """log π(token_p | tokens_<p) at every position (0 at position 0), [N, L]."""
    return picked(next_token_logprobs(model, batch), batch)

"""Episodes as RL training sequences, token for token as they were sampled.

An episode becomes one sequence — its opening prompt, then each reply's
sampled token ids, then the next observation as the chat template renders it —
with the loss on the sampled tokens only (observations, the system prompt and
the template's headers are context), as AgentGym-RL lays out a trajectory.
Cost grows with the episode's length, not with its square. Where the template
does not render the earlier turns as a prefix of the next prompt (a template
that rewrites history, or a reply whose text re-tokenises differently), the
next turn starts a new sequence with the prompt the policy saw, so the context
of every sampled token is exactly what the policy was given. The stored
sampling log-probs line up with the sampled tokens; a trajectory's sequences
share its reward and advantage.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from evoflow.envs.formats import NO_THINKING
from evoflow.policy.base import prompt_ids
from evoflow.store.schema import Episode


@dataclass
class TurnSequence:
    input_ids: list[int]
    generated: list[bool]  # True on sampled tokens (the loss positions)
    old_logprobs: list[float]  # sampling log-prob at each sampled token, else 0
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
    temperature: torch.Tensor | None = None  # [N] each row's sampling T (None: 1)


def turn_sequences(
    tokenizer, episodes: list[Episode], template=NO_THINKING
) -> list[TurnSequence]:
    """The sampled turns of ``episodes`` as sequences (one per episode where
    the template allows; see the module notes).

    Raises ``ValueError`` naming the episode when a turn lacks token ids or
    log-probs (a backend that does not report them cannot feed RL).
    """
    sequences = []
    for index, episode in enumerate(episodes):
        current: TurnSequence | None = None
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
            if current is None or prompt[: len(current.input_ids)] != current.input_ids:
                current = TurnSequence([], [], [], index)
                sequences.append(current)
            context = prompt[len(current.input_ids) :]
            tokens = list(message.token_ids)
            current.input_ids += context + tokens
            current.generated += [False] * len(context) + [True] * len(tokens)
            current.old_logprobs += [0.0] * len(context) + list(message.logprobs)[
                : len(tokens)
            ]
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
        size = len(s.input_ids)
        batch.input_ids[row, :size] = torch.tensor(s.input_ids)
        batch.attention_mask[row, :size] = 1
        batch.loss_mask[row, :size] = torch.tensor(s.generated, dtype=torch.float32)
        batch.old_logprobs[row, :size] = torch.tensor(s.old_logprobs)
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
        hidden = last_hidden(inner.get_decoder(), batch.input_ids)
        logits = inner.get_output_embeddings()(hidden[:, :-1][read])
    logits = logits.float()
    if batch.temperature is not None:
        rows = read.nonzero()[:, 0]  # the row of each read position, in order
        logits = logits / batch.temperature.to(logits)[rows, None]
    logp_all = torch.log_softmax(logits, dim=-1)
    chosen = logp_all.gather(-1, batch.input_ids[:, 1:][read][:, None])[:, 0]
    logprobs = _scatter(chosen, read)
    spread = None
    if entropy:
        spread = _scatter(-(logp_all.exp() * logp_all).sum(-1), read)
    return TokenStats(logprobs, spread, hidden)


MIN_SHARED = 16  # a shorter common opening is read once per row


def last_hidden(decoder, input_ids: torch.Tensor) -> torch.Tensor:
    """The decoder's last hidden states ``[N, L, H]``, rows that open alike
    read once up to where they part.

    The samples of one task share their opening prompt, often most of their
    tokens: the common prefix runs through the decoder once, its key/value
    cache is repeated for every row and each row's rest attends to it. Under
    causal attention a position sees only the tokens before it, so every
    hidden state is the one a full forward of its row gives, and gradients
    reach the prefix through the cache.
    """
    shared = shared_opening(input_ids)
    if not shared:
        return decoder(input_ids=input_ids).last_hidden_state
    head = decoder(input_ids=input_ids[:1, :shared], use_cache=True)
    cache = head.past_key_values
    cache.batch_repeat_interleave(input_ids.shape[0])
    tail = decoder(input_ids=input_ids[:, shared:], past_key_values=cache,
                   use_cache=True).last_hidden_state  # fmt: skip
    opening = head.last_hidden_state.expand(input_ids.shape[0], -1, -1)
    return torch.cat([opening, tail], dim=1)


def shared_opening(input_ids: torch.Tensor) -> int:
    """The leading tokens ``last_hidden`` reads once for all rows: their
    common prefix when there are rows to share it and it is ``MIN_SHARED``
    long, else 0."""
    if input_ids.shape[0] < 2:
        return 0
    shared = common_prefix(input_ids)
    return shared if shared >= MIN_SHARED else 0


def common_prefix(input_ids: torch.Tensor) -> int:
    """How many leading tokens every row shares (at most ``L - 1``, so each
    row keeps a token of its own to read)."""
    same = (input_ids == input_ids[:1]).all(dim=0)
    parted = (~same).nonzero()
    shared = int(parted[0, 0]) if len(parted) else input_ids.shape[1]
    return min(shared, input_ids.shape[1] - 1)


def _scatter(values: torch.Tensor, read: torch.Tensor) -> torch.Tensor:
    """Values read at positions p - 1 placed at p, zeros elsewhere, ``[N, L]``."""
    out = torch.zeros(read.shape[0], read.shape[1] + 1, dtype=values.dtype,
                      device=values.device)  # fmt: skip
    out[:, 1:][read] = values
    return out


def token_logprobs(model, batch: RLBatch, dtype=torch.float32) -> torch.Tensor:
    """log π(token_p | tokens_<p) at generated positions (0 elsewhere), [N, L]."""
    return token_stats(model, batch, dtype).logprobs

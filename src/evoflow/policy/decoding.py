"""The decoding loop of the ``hf`` backend: one batch, token by token.

Prefill: the prompt tokens not already cached are encoded in groups of rows of
similar length (a left-padded batch computes every padding token, so one batch
of a 250-token Maze prompt and a 600-token BabyAI prompt would spend half its
work on padding). Each row's keys/values then sit right-aligned in one batch
cache (``[pad | tokens]``, see ``evoflow.policy.kv``) with an attention mask and
explicit positions; padding carries no attention weight, so each row computes
what it would compute alone. Sampling uses one ``torch.Generator`` per row,
seeded by the caller, so the same chats, seeds and batch give the same replies
run after run.

A row that produced a stop token is finished. Finished rows first keep
decoding padding that nothing attends to; once they make up a quarter of the
batch they are dropped from it (with their cache rows), so long histories that
are done stop costing attention reads. Just before a row leaves — or when the
call ends — ``on_finish`` receives it, so its keys/values can be kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache

from evoflow.policy.base import SamplingParams
from evoflow.policy.constrain import RowConstraint, restrict
from evoflow.policy.kv import Match, SlotLayer, slot_cache

# Drop finished rows once they are at least this share of the batch.
COMPACT_SHARE = 0.25
# Prefill groups: padding at most this share of the tokens a group computes,
# and at most this many tokens per forward pass (bounds activation memory).
PAD_SHARE = 0.2
GROUP_TOKENS = 8192


@dataclass
class Rows:
    """What is decoded for each original row of the call."""

    generated: list[list[int]]
    finish: list[str]
    logprobs: list[list[float]]


def start_batch(prompts: list[list[int]], matches: list[Match], pad_id: int):
    """Input ids, mask, positions and cache of one left-padded prefill pass."""
    rows = len(prompts)
    lengths = [n for n, _ in matches]
    past = max(lengths)
    new = [prompt[n:] for prompt, n in zip(prompts, lengths, strict=True)]
    width = max(len(t) for t in new)
    input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
    mask = torch.zeros((rows, past + width), dtype=torch.long)
    positions = torch.zeros((rows, width), dtype=torch.long)
    for r, (n, tokens) in enumerate(zip(lengths, new, strict=True)):
        input_ids[r, width - len(tokens) :] = torch.tensor(tokens)
        mask[r, past - n : past] = 1
        mask[r, past + width - len(tokens) :] = 1
        positions[r, width - len(tokens) :] = torch.arange(n, n + len(tokens))
    return input_ids, mask, positions, slot_cache(matches, past, past + width)


def prefill_groups(new_lengths: list[int]) -> list[list[int]]:
    """Rows grouped by similar length, so padding stays a small share."""
    order = sorted(range(len(new_lengths)), key=lambda r: (new_lengths[r], r))
    groups: list[list[int]] = []
    for r in order:
        group = groups[-1] if groups else None
        if group is not None:
            size, longest = len(group) + 1, new_lengths[r]  # sorted: r is longest
            real = sum(new_lengths[g] for g in group) + longest
            if (
                size * longest <= (1 + PAD_SHARE) * real
                and size * longest <= GROUP_TOKENS
            ):
                group.append(r)
                continue
        groups.append([r])
    return groups


def prefill(forward: Callable, prompts, matches, pad_id: int, extra: int):
    """Encode every row's new tokens; return first logits, mask, positions, cache.

    The batch cache holds each row's tokens right-aligned in ``total`` columns
    and has room for ``extra`` more.
    """
    lengths = [len(p) for p in prompts]
    total = max(lengths)
    layers: list[SlotLayer] = []
    logits = [None] * len(prompts)
    for group in prefill_groups(
        [len(p) - n for p, (n, _) in zip(prompts, matches, strict=True)]
    ):
        ids, mask, positions, cache = start_batch(
            [prompts[r] for r in group], [matches[r] for r in group], pad_id
        )
        out = forward(ids, mask, positions, cache, group)
        if not layers:
            layers = [SlotLayer(total + extra) for _ in cache.layers]
            for layer, source in zip(layers, cache.layers, strict=True):
                layer.reserve(source.keys[:1], len(prompts), total)
        for i, r in enumerate(group):
            logits[r] = out[i]
            real = mask[i].bool().to(cache.layers[0].keys.device)
            for layer, source in zip(layers, cache.layers, strict=True):
                layer.put(
                    r,
                    total - lengths[r],
                    source.keys[i][:, real],
                    source.values[i][:, real],
                )
    batch_mask = torch.zeros((len(prompts), total + extra), dtype=torch.long)
    for r, n in enumerate(lengths):
        batch_mask[r, total - n : total] = 1
    return (
        torch.stack(logits),
        batch_mask,
        torch.tensor(lengths),
        total,
        Cache(layers=layers),
    )


def decode(
    forward: Callable,
    prompts: list[list[int]],
    matches: list[Match],
    params: SamplingParams,
    seeds: list[int],
    pad_id: int,
    stop_ids: set[int],
    on_finish: Callable[[int, list[int], object, int, torch.Tensor], None],
    constraints: list[RowConstraint | None] | None = None,
) -> Rows:
    """Decode up to ``params.max_new_tokens`` tokens for every prompt.

    ``forward(ids, mask, positions, cache, rows)`` runs the model on the current
    batch (``rows``: original indices of its rows) and returns the logits of the
    last position. ``on_finish(row, tokens, cache, batch_index, mask_row)`` is
    called once per original row while its cache row is still in the batch.
    ``constraints`` (one per original row, None: free) restrict what a row may
    sample (``evoflow.policy.constrain``); log-probabilities stay the model's.
    """
    logits, mask, next_pos, width, cache = prefill(
        forward, prompts, matches, pad_id, params.max_new_tokens
    )
    out = Rows([[] for _ in prompts], ["length"] * len(prompts), [[] for _ in prompts])
    generators = [torch.Generator().manual_seed(int(s) % (2**63)) for s in seeds]
    live = list(range(len(prompts)))  # original row of each batch row
    running = torch.ones(len(live), dtype=torch.bool)
    step_ids = step_pos = None
    for step in range(params.max_new_tokens):
        if step:
            logits = forward(step_ids, mask[:, :width], step_pos, cache, live)
        logits = logits.float().cpu()
        allowed = logits
        if constraints is not None:
            allowed = logits.clone()
            rows = [constraints[r] if running[i] else None for i, r in enumerate(live)]
            restrict(allowed, rows, params.max_new_tokens - step)
        tokens = sample(allowed, params, [generators[r] for r in live])
        chosen = token_logprobs(logits, tokens).tolist()
        for i, r in enumerate(live):
            if running[i]:
                out.generated[r].append(int(tokens[i]))
                out.logprobs[r].append(chosen[i])
                if constraints is not None and constraints[r] is not None:
                    constraints[r].advance(int(tokens[i]))
                if int(tokens[i]) in stop_ids:
                    running[i] = False
                    out.finish[r] = "stop"
        if not running.any() or step == params.max_new_tokens - 1:
            break
        if (~running).sum() >= max(1, COMPACT_SHARE * len(live)):
            keep = _compact(running, live, out, cache, mask[:, :width], on_finish)
            live = [live[i] for i in keep.tolist()]
            tokens, mask, next_pos = tokens[keep], mask[keep], next_pos[keep]
            running = running[keep]
        # Finished rows still present decode padding that nothing attends to.
        step_ids = torch.where(running, tokens, torch.full_like(tokens, pad_id))[
            :, None
        ]
        mask[:, width] = running.long()
        width += 1
        step_pos = next_pos[:, None]
        next_pos = next_pos + 1
    for i, r in enumerate(live):
        on_finish(r, out.generated[r], cache, i, mask[i, :width])
    return out


def _compact(running, live, out: Rows, cache, mask, on_finish) -> torch.Tensor:
    """Hand finished rows to ``on_finish``, drop them; return the kept indices."""
    for i in torch.nonzero(~running).flatten().tolist():
        on_finish(live[i], out.generated[live[i]], cache, i, mask[i])
    keep = torch.nonzero(running).flatten()
    cache.batch_select_indices(keep)
    return keep


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log p(token) per row under softmax of the raw logits (temperature 1)."""
    picked = logits.gather(-1, tokens[:, None])[:, 0]
    return picked - torch.logsumexp(logits, dim=-1)


def sample(logits: torch.Tensor, params: SamplingParams, generators) -> torch.Tensor:
    """Next token per row: argmax at temperature 0, else seeded nucleus sampling
    (from the smallest set of most likely tokens whose mass reaches ``top_p``)."""
    if params.temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        outside = sorted_probs.cumsum(dim=-1) - sorted_probs >= params.top_p
        sorted_probs[outside] = 0.0
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.stack(
        [
            torch.multinomial(p, 1, generator=g)[0]
            for p, g in zip(probs, generators, strict=True)
        ]
    )

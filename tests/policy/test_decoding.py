"""The decoding loop with a scripted model: stops, compaction, cache hand-off."""

from __future__ import annotations

import torch

from evoflow.policy.base import SamplingParams
from evoflow.policy.decoding import decode, sample

VOCAB, STOP, PAD = 10, 9, 0


def scripted(replies: list[list[int]], seen: list[list[int]]):
    """A one-layer stand-in model: row r's greedy choice at its k-th call is
    ``replies[r][k]``; it appends one key/value column per input token."""
    calls = [0] * len(replies)

    def forward(ids, mask, positions, cache, rows):
        seen.append(list(rows))
        kv = torch.zeros((len(rows), 1, ids.shape[1], 2))
        cache.update(kv, kv.clone(), 0)
        logits = torch.zeros((len(rows), VOCAB))
        for i, r in enumerate(rows):
            logits[i, replies[r][min(calls[r], len(replies[r]) - 1)]] = 1.0
            calls[r] += 1
        return logits

    return forward


def test_rows_stop_at_their_own_stop_token_and_leave_the_batch():
    # Prepare: four rows; rows 1 and 2 stop early, so they are compacted away
    replies = [
        [1, 2, 3, 4, 5, 6],
        [3, STOP],
        [4, 4, STOP],
        [5, 6, 7, 8, 1, 2],
    ]
    seen: list[list[int]] = []
    finished: dict[int, tuple[list[int], int]] = {}

    def on_finish(row, tokens, cache, index, mask_row):
        finished[row] = (list(tokens), int(mask_row.sum()))

    # Execute
    out = decode(
        scripted(replies, seen),
        prompts=[[7, 7], [7], [7, 7, 7], [7]],
        matches=[(0, None)] * 4,
        params=SamplingParams(temperature=0.0, max_new_tokens=6),
        seeds=[0, 1, 2, 3],
        pad_id=PAD,
        stop_ids={STOP},
        on_finish=on_finish,
    )

    # Assert: replies and finish reasons per row
    assert out.generated == [replies[0], [3, STOP], [4, 4, STOP], replies[3]]
    assert out.finish == ["length", "stop", "stop", "length"]
    # prefill in groups of similar new length: rows 1 and 3 (1 token each), then
    # rows 0 and 2 (2 and 3 tokens: 6 computed for 5 real, padding within 20 %)
    assert seen[:2] == [[1, 3], [0, 2]]
    # row 1 finished at step 2 (1 of 4 rows = a quarter) and left at once;
    # row 2 finished at step 3 (1 of 3) and left too
    assert seen[2:] == [[0, 1, 2, 3], [0, 2, 3], [0, 3], [0, 3], [0, 3]]
    # every row is handed over once; its real columns are its prompt plus the
    # tokens fed back (a stop token, and the last sampled token, never are)
    assert finished == {
        0: (replies[0], 2 + 5),
        1: ([3, STOP], 1 + 1),
        2: ([4, 4, STOP], 3 + 2),
        3: (replies[3], 1 + 5),
    }


def test_nucleus_keeps_the_smallest_head_reaching_top_p():
    # Prepare: p = (0.5, 0.3, 0.15, 0.05) at temperature 1; the smallest set of
    # most likely tokens whose mass reaches 0.75 is {0, 1} (0.5 + 0.3), and the
    # one reaching 0.45 is {0} alone. Renormalized, {0, 1} is sampled 5:3.
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])).repeat(4000, 1)
    generators = [torch.Generator().manual_seed(i) for i in range(4000)]

    # Execute
    head = sample(logits, SamplingParams(temperature=1.0, top_p=0.75), generators)
    top = sample(logits, SamplingParams(temperature=1.0, top_p=0.45), generators)
    full = sample(logits, SamplingParams(temperature=1.0), generators)

    # Assert
    assert set(head.tolist()) == {0, 1}
    assert abs((head == 0).float().mean().item() - 0.625) < 0.03
    assert set(top.tolist()) == {0}
    assert set(full.tolist()) == {0, 1, 2, 3}

"""RL sequences hold the sampled tokens, and a forward pass over the padded batch
gives back the log-probs stored at sampling time."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.train.rl_data import collate, token_logprobs, turn_sequences


@pytest.fixture(scope="module")
def fp32() -> HFPolicy:
    return HFPolicy("tiny-random-llama", max_context=1024, dtype="float32")


@pytest.fixture(scope="module")
def episodes(fp32):
    spec = RolloutSpec(experiment="t", method="m", split="train", source="explore",
                       horizon=3, samples=2, seed=5,
                       sampling=SamplingParams(temperature=1.0, max_new_tokens=10))  # fmt: skip
    return rollout(fp32, lambda: make_env("maze"), ["0", "1"], spec, progress=False)


def test_a_padded_forward_pass_reproduces_the_sampling_logprobs(fp32, episodes):
    sequences = turn_sequences(fp32.tokenizer, episodes)
    turns = sum(m.role == "assistant" for e in episodes for m in e.messages)
    assert len(sequences) == turns
    assert {s.trajectory for s in sequences} == set(range(len(episodes)))

    batch = collate(sequences, pad_id=0)
    with torch.no_grad():
        recomputed = token_logprobs(fp32.base, batch)

    mask = batch.loss_mask.bool()
    assert int(mask.sum()) == sum(len(s.old_logprobs) for s in sequences)
    assert torch.allclose(recomputed[mask], batch.old_logprobs[mask], atol=1e-4)


def test_a_turn_without_sampled_tokens_is_named(fp32, episodes):
    episode = episodes[0]
    turn = next(i for i, m in enumerate(episode.messages) if m.role == "assistant")
    messages = list(episode.messages)
    messages[turn] = dataclasses.replace(messages[turn], token_ids=None)
    broken = dataclasses.replace(episode, messages=messages)
    with pytest.raises(
        ValueError, match=f"episode {episode.episode_id}: assistant turn"
    ):
        turn_sequences(fp32.tokenizer, [broken])

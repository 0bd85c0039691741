"""Stored log-probs are what a teacher-forced forward pass of the model gives."""

from __future__ import annotations

import pytest
import torch

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.store import ShardMeta, read_shard, table_to_episodes, write_shard


@pytest.fixture(scope="module")
def fp32() -> HFPolicy:
    return HFPolicy("tiny-random-llama", max_context=1024, dtype="float32")


def teacher_forced(
    policy: HFPolicy, chat: list[dict], tokens: list[int]
) -> list[float]:
    """log p(token_t | prompt, tokens_<t) from one plain forward pass, no cache."""
    prompt = policy.encode(chat)
    ids = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logits = policy.base(input_ids=ids).logits[0].float()
    steps = logits[len(prompt) - 1 : len(prompt) - 1 + len(tokens)]
    logp = torch.log_softmax(steps, dim=-1)
    return logp.gather(-1, torch.tensor(tokens)[:, None])[:, 0].tolist()


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_stored_logprobs_equal_a_teacher_forced_pass(fp32, tmp_path, temperature):
    # Prepare: multi-turn episodes, so later turns decode on top of reused caches
    spec = RolloutSpec(
        experiment="t", method="m", split="train", source="explore", horizon=3,
        samples=2, seed=3,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=12),
    )  # fmt: skip
    played = rollout(fp32, lambda: make_env("maze"), ["0", "1"], spec, progress=False)
    write_shard(tmp_path / "s.parquet", played, ShardMeta("t", "c" * 64, "tiny", 0))

    # Execute
    episodes = table_to_episodes(read_shard(tmp_path / "s.parquet"))

    # Assert: every generated turn carries its tokens and their log-probs
    checked = 0
    for episode in episodes:
        for i, message in enumerate(episode.messages):
            if message.role != "assistant":
                continue
            chat = [
                {"role": m.role, "content": m.content} for m in episode.messages[:i]
            ]
            assert len(message.token_ids) == len(message.logprobs) > 0
            expected = teacher_forced(fp32, chat, message.token_ids)
            assert message.logprobs == pytest.approx(expected, abs=1e-4)
            assert message.valid is not None and message.reward is not None
            checked += 1
    assert checked >= 8
    assert [(e.group, e.sample) for e in episodes[:2]] == [("maze:0", 0), ("maze:0", 1)]

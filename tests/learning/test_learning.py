"""Learning guards: a short federated SFT must turn ~0 success into real success.

The real pipeline at a small scale, on the embedded model: two clients each
fine-tune a LoRA on expert demonstrations of TextCraft depth-1 goals (take the
base items, craft the goal with its listed command), the server averages the
two adapters, and the global adapter plays held-out depth-1 test goals greedily
through the HF backend — the path every evaluation job takes. The pre-trained
model solves none of them (it echoes the crafting commands instead of acting);
after two epochs on 12 demonstrations per client it solves 11 of 31 (2-core
bf16 machine, one thread; the test asks for 6). With 8 per client it solved 10
before the recipe book kept packing recipes, and 5 after (two or three epochs;
the depth-1 stratum then gained the ingots and storage blocks, which it solves,
and lost the iron and gold tools, and its 31 test goals were drawn anew).

The test is meant to fail when any stage of learning breaks. Broken once on
purpose with today's settings, the server summing the clients' adapters instead
of averaging them, it failed (0 of 31 solved after training). Earlier, at 8
demonstrations per client and the earlier book, it also failed with SFT labels
shifted by one token, with the optimizer step skipped so the LoRA never updates
and with evaluation ignoring the adapter (0 of 31 each).
"""

from __future__ import annotations

import pytest

from evoflow.envs import env_factory, make_env, play_expert, split_ids
from evoflow.envs.textcraft import TextCraftEnv
from evoflow.fed.aggregate import aggregate_adapters
from evoflow.policy import SamplingParams, make_policy
from evoflow.rollout.engine import Job, RolloutSpec, play
from evoflow.rollout.expert import trajectory_episode
from evoflow.seeding import choose
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_trainer import train_sft

pytestmark = pytest.mark.slow
MODEL = "smollm2-135m-instruct"
ENV = "textcraft"
CAP = 6  # depth-1 goals take the expert 2-3 turns
DEMOS = 24  # split between two clients
SFT = SFTConfig(learning_rate=3e-3, epochs=2, batch_size=2, max_length=1024, seed=0)
BEFORE_AT_MOST = 1  # of the 31 held-out goals, pre-trained
AFTER_AT_LEAST = 6  # of the 31 held-out goals, after federated SFT


def depth_one(split: str) -> list[str]:
    return [t for t in split_ids(ENV, split) if TextCraftEnv.stratum(t) == "depth 1"]


def demonstrations() -> list[list[dict]]:
    env, chats = make_env(ENV), []
    for task in choose(depth_one("train"), DEMOS, 0, "learning-test"):
        played = play_expert(env, task, CAP)
        assert played.success
        episode = trajectory_episode(played, env.system_prompt, "learning", CAP, 0)
        chats.append([{"role": m.role, "content": m.content, "loss": m.loss}
                      for m in episode.messages])  # fmt: skip
    return chats


def successes(adapter: str | None) -> int:
    """Held-out depth-1 test goals (all 31) solved greedily with ``adapter``."""
    spec = RolloutSpec(experiment="learning", method="test", split="test",
                       source="eval", horizon=CAP, width=16, max_invalid=2,
                       adapter=adapter, sampling=SamplingParams(0.0, max_new_tokens=40))  # fmt: skip
    policy = make_policy("hf", MODEL, max_context=2048, batch_size=16)
    try:
        jobs = [Job(ENV, task, 0, spec) for task in depth_one("test")]
        episodes = play(policy, {ENV: env_factory(ENV)}, jobs, 16, progress=False)
    finally:
        policy.close()
    return sum(e.success for e in episodes)


def test_federated_sft_learns_held_out_textcraft(tmp_path):
    chats = demonstrations()
    before = successes(None)
    clients = []
    for k in range(2):
        folder = tmp_path / f"client{k}"
        train_sft(chats[k::2], MODEL, folder, SFT, progress=False)
        clients.append(folder)
    aggregate_adapters(clients, tmp_path / "global", tmp_path / "comm.json")
    after = successes(str(tmp_path / "global"))
    print(f"depth-1 TextCraft test goals solved: {before} before, {after} after")
    assert before <= BEFORE_AT_MOST
    assert after >= AFTER_AT_LEAST, (
        f"after federated SFT only {after} of {len(depth_one('test'))} held-out "
        f"goals solved (at least {AFTER_AT_LEAST} expected): learning is broken"
    )

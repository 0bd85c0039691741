"""One RL step on the embedded model: where the time goes, and the episode layout.

Plays one step of multi-turn Maze episodes (4 tasks × 4 samples, horizon 4) with
SmolLM2-135M through the rollout engine, then times the update of a fresh LoRA
on those episodes twice, in the same run:

- ``episode``: one training sequence per episode (``evoflow.train.rl.data.turn_sequences``:
  prompt, each reply's sampled tokens, the observations between them);
- ``per-turn`` (baseline): one sequence per assistant turn, each re-reading the
  whole chat before it;
- ``unshared`` (baseline): the episode layout with every row of a micro-batch
  read whole, its task's common opening again in each
  (``evoflow.train.rl.data.last_hidden`` reads it once).

It prints the split of the step (rollout / preparation / update), the update's
throughput in trained (sampled) tokens/s and in all tokens processed/s, the SFT
loop's tokens/s on the same chats for comparison, the compute as a share of
this machine's bf16 matmul peak (``roofline.py``), and peak RSS.

    python benchmarks/rl_step.py [--threads 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import roofline
import torch

from evoflow.envs.maze import MazeEnv
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.train.rl import data as rl_data
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.data import collate, turn_sequences
from evoflow.train.rl.trainer import Learner
from evoflow.train.rl.update import (
    micro_batches,
    token_advantages,
    tokens_read,
    update,
)
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_trainer import load_lora_model, peak_rss_mb, train_sft

MODEL = "smollm2-135m-instruct"
SHARED = rl_data.MIN_SHARED


def per_turn(episodes):
    """Each assistant turn as its own episode (the chat before it as context)."""
    out = []
    for episode in episodes:
        for k, message in enumerate(episode.messages):
            if message.role == "assistant":
                earlier = [
                    dataclasses.replace(m, loss=False) if m.role == "assistant" else m
                    for m in episode.messages[:k]
                ]
                out.append(dataclasses.replace(episode, messages=[*earlier, message]))
    return out


def timed_update(episodes, config: RLConfig, shared: bool = True
                 ) -> tuple[float, int, int]:  # fmt: skip
    torch.manual_seed(0)
    rl_data.MIN_SHARED = SHARED if shared else 1 << 30
    tokenizer, model = load_lora_model(MODEL, config, None)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=config.learning_rate)  # fmt: skip
    learner = Learner(tokenizer, model, optimizer, None, torch.bfloat16)
    sequences = turn_sequences(tokenizer, episodes)
    batch = collate(sequences, tokenizer.pad_token_id or 0)
    rewards = torch.tensor([e.reward for e in episodes])
    groups = torch.tensor([hash(e.task_id) % 1000 for e in episodes])
    advantages, _ = token_advantages(batch, rewards, groups, "reinforce_pp")
    started = time.perf_counter()
    update(learner.model, optimizer, batch, advantages, config, learner.dtype)
    seconds = time.perf_counter() - started
    chunks = micro_batches(batch, config.micro_batch, config.micro_tokens)
    total = sum(tokens_read(batch, c.tolist()) for c in chunks)
    return seconds, int(batch.loss_mask.sum()), total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    roof = roofline.measure(args.threads)
    print(roofline.describe(roof, args.threads))
    policy = HFPolicy(MODEL, max_context=2048)
    spec = RolloutSpec(experiment="bench", method="rl", split="train", source="explore",
                       horizon=4, samples=4, width=16, seed=1,
                       sampling=SamplingParams(temperature=1.0, max_new_tokens=30))  # fmt: skip
    started = time.perf_counter()
    episodes = rollout(
        policy, MazeEnv, ["100", "101", "102", "103"], spec, progress=False
    )
    rollout_s = time.perf_counter() - started
    generated = sum(len(m.token_ids or []) for e in episodes for m in e.messages)
    print(f"rollout: {len(episodes)} episodes, {sum(e.n_turns for e in episodes)} turns, "
          f"{generated} sampled tokens in {rollout_s:.1f} s ({generated / rollout_s:.0f} tok/s)")  # fmt: skip
    config = RLConfig(estimator="reinforce_pp", micro_batch=4, learning_rate=1e-4)
    # forward, backward (input grads only: frozen weights) and the reference forward
    # over the decoder's linear layers (135M less the 28M tied embedding)
    flops_per_token = 6 * 106.5e6
    results = {}
    variants = (("per-turn", per_turn(episodes), True), ("unshared", episodes, False),
                ("episode", episodes, True))  # fmt: skip
    for name, data, shared in variants:
        seconds, trained, total = timed_update(data, config, shared)
        results[name] = seconds
        share = (
            100
            * flops_per_token
            * total
            / seconds
            / (roofline.peak(roof, "bfloat16") * 1e9)
        )
        print(f"update [{name:8}]: {seconds:6.1f} s, {total} tokens processed "
              f"({total / seconds:.0f} tok/s, {share:.0f}% of bf16 peak), "
              f"{trained} trained ({trained / seconds:.0f} tok/s)")  # fmt: skip
    print(
        f"episode layout vs per-turn: {results['per-turn'] / results['episode']:.2f}x faster update"
    )
    print(f"opening read once vs per row: {results['unshared'] / results['episode']:.2f}x "
          "faster update")  # fmt: skip
    chats = [
        [{"role": m.role, "content": m.content} for m in e.messages] for e in episodes
    ]
    with tempfile.TemporaryDirectory() as out:
        summary = train_sft(chats, MODEL, out, SFTConfig(epochs=1, batch_size=4, max_length=2048),
                            progress=False)  # fmt: skip
    print(f"SFT loop on the same chats: {summary['trained_tokens'] / summary['seconds']:.0f} "
          f"trained tok/s (including load and save)")  # fmt: skip
    print(f"step split: rollout {rollout_s:.1f} s, update {results['episode']:.1f} s; "
          f"peak RSS {peak_rss_mb():.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()

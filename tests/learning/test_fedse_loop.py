"""Learning guard: Fed-SE's loop closes — explored successes enter the buffer
and lift held-out success above FedIT's.

The real pipeline at a small scale, on the embedded model: two clients share
BabyAI's GoTo stratum (the embedded default's), each starting from one expert
demonstration. Every round both Fed-SE clients explore 8 training tasks each at
temperature 1.0 under action-constrained decoding with the global adapter (one
batch of 16, as the workflow's one exploration job per round), write their
episodes as shards, and build their buffers with the project's success filter
on top of last round's (``build_buffer``); each trains its LoRA on its buffer
from the global adapter, and the server averages the two. FedIT runs the same
three rounds on the demonstrations alone, with the same SFT seeds, so the
explored successes are the only difference between the two. Both final global
adapters then play 20 held-out GoTo test tasks greedily. Episodes end after 6
turns (a GoTo task is one listed ``go to`` away when its object is in view).

SFT cuts at 1,024 tokens, as the embedded default does: at 768 both
demonstrations (869 and 931 tokens) were dropped and FedIT trained on nothing.
On a 2-core bf16 machine (one thread, the other core busy with another learning
test for half the time) the explored successes were 4, 8, 9 in rounds 1-3 (of
16 a round) and Fed-SE solved 12 of 20 held-out tasks to FedIT's 0, in 14 min
34 s (it prints the counts); with each client exploring alone and a 10-turn cap
the same machine took 16 min 27 s (4, 7, 6; 12 to 0).
Broken once on purpose, with the success filter keeping failures
(``selection.mask`` selecting every explored episode), it failed in round 1:
8 episodes entered client 0's buffer for 2 explored successes.
Without any explored episode entering the buffer, Fed-SE's buffers are FedIT's
and its SFT seeds are the same, so both train the same adapters and the margin
cannot hold (argued from determinism, not run).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evoflow.envs import env_factory, split_ids
from evoflow.evaluate.run import eval_tasks
from evoflow.fed.aggregate import aggregate_adapters
from evoflow.policy import SamplingParams, make_policy
from evoflow.rollout.engine import Job, RolloutSpec, play
from evoflow.rollout.expert import expert_demos
from evoflow.seeding import choose
from evoflow.store import ShardMeta, load_episodes, write_shard
from evoflow.store.manifest import build_buffer, read_manifest, write_shards_manifest
from evoflow.train.run import train_from_manifest

pytestmark = pytest.mark.slow
MODEL = "smollm2-135m-instruct"
ENV, STRATA, CAP = "babyai", ["goto"], 6
CLIENTS, ROUNDS, EXPLORE, TEST = 2, 3, 8, 20
WIDTH = 20  # every episode of a call in one batch (16 explored, 20 held out)
SFT = {"learning_rate": 3e-3, "epochs": 1, "batch_size": 1, "max_length": 1024}
META = ShardMeta(experiment="loop", config_hash="test", model_id=MODEL, seed=0)
MARGIN = 2  # held-out tasks Fed-SE must solve beyond FedIT's


def rollouts(policy, tasks, adapter, temperature, seed, split, clients=None):
    """One batch over ``tasks`` (client ``clients[i]`` plays ``tasks[i]``)."""
    source = "explore" if split == "train" else "eval"
    spec = RolloutSpec(experiment="loop", method="fedse", split=split, source=source,
                       horizon=CAP, width=WIDTH, max_invalid=3, adapter=adapter, seed=seed,
                       constrain_actions=True,
                       sampling=SamplingParams(temperature, max_new_tokens=40))  # fmt: skip
    clients = clients or [None] * len(tasks)
    jobs = [Job(ENV, task, 0, replace(spec, client=client))
            for task, client in zip(tasks, clients, strict=True)]  # fmt: skip
    return play(policy, {ENV: env_factory(ENV)}, jobs, WIDTH, progress=False)


def seed_manifests(root: Path) -> list[Path]:
    """One expert demonstration per client, as the seed buffer's manifest."""
    demos = expert_demos(ENV, CLIENTS, "loop", 0, CAP, STRATA)
    manifests = [root / f"seed{k}.json" for k in range(CLIENTS)]
    for k, demo in enumerate(demos):
        write_shard(root / f"seed{k}.parquet", [demo], META)
        write_shards_manifest(manifests[k], [root / f"seed{k}.parquet"])
    return manifests


def federated_round(root, round, sources, start):
    """Each client trains on its source manifest from ``start``; the mean."""
    clients = []
    for k, manifest in enumerate(sources):
        folder = root / f"r{round}" / f"c{k}"
        sft = {**SFT, "seed": 100 * round + k}
        train_from_manifest(manifest, MODEL, folder, sft, start, progress=False)
        clients.append(folder)
    out = root / f"r{round}" / "global"
    aggregate_adapters(clients, out, root / f"r{round}" / "comm.json")
    return str(out)


def explore_round(policy, root, round, buffers, start) -> list[dict]:
    """Both clients explore in one batch with the global adapter; each then
    extends its buffer with its own successes."""
    train = split_ids(ENV, "train", strata=STRATA)
    tasks = {
        f"c{k}": choose(train, EXPLORE, 0, "explore", round, k) for k in range(CLIENTS)
    }
    episodes = rollouts(policy, sum(tasks.values(), []), start, 1.0, 1000 * round, "train",
                        [c for c, ts in tasks.items() for _ in ts])  # fmt: skip
    infos = []
    for k in range(CLIENTS):
        shard = root / f"r{round}" / f"explore{k}.parquet"
        write_shard(shard, [e for e in episodes if e.client == f"c{k}"], META)
        out = root / f"r{round}" / f"buffer{k}.json"
        build_buffer(out, buffers[k], shard, "success", previous=buffers[k])
        buffers[k] = out
        infos.append(read_manifest(out).info)
    return infos


def test_fedse_explored_successes_lift_held_out_success_above_fedit(tmp_path):
    policy = make_policy("hf", MODEL, max_context=2048, batch_size=WIDTH)
    try:
        seeds = seed_manifests(tmp_path)
        buffers, fedse, fedit, found = list(seeds), None, None, []
        for round in range(1, ROUNDS + 1):
            infos = explore_round(policy, tmp_path / "fedse", round, buffers, fedse)
            found.append(sum(i["explored_successes"] for i in infos))
            for info in infos:  # the filter: explored successes, and only they
                assert info["added_episodes"] == info["explored_successes"]
            fedse = federated_round(tmp_path / "fedse", round, buffers, fedse)
            fedit = federated_round(tmp_path / "fedit", round, seeds, fedit)
        tasks = eval_tasks(ENV, TEST, 0, strata=STRATA)
        held = {name: sum(e.success for e in rollouts(policy, tasks, adapter, 0.0, 0, "test"))
                for name, adapter in (("fedse", fedse), ("fedit", fedit))}  # fmt: skip
    finally:
        policy.close()
    kept = load_episodes(buffers[0], columns=["success", "source"])
    print(f"explored successes by round {found}; held-out {held}")
    assert sum(found) > 0 and all(kept["success"].to_pylist())
    assert held["fedse"] >= held["fedit"] + MARGIN, (
        f"Fed-SE solved {held['fedse']} of {TEST} held-out GoTo tasks, FedIT "
        f"{held['fedit']}: explored successes did not lift held-out success"
    )

"""Learning guard: Fed-SE's loop closes — explored successes enter the buffer
and lift held-out success above FedIT's AT THE SAME TRAINING BUDGET.

The real pipeline at a small scale, on the embedded model: two clients share
BabyAI's GoTo stratum (the embedded default's), each starting from one expert
demonstration. Every round both Fed-SE clients explore 8 training tasks each at
temperature 1.0 under action-constrained decoding with the global adapter (one
batch of 16, as the workflow's one exploration job per round), write their
episodes as shards, and build their buffers with the project's success filter
on top of last round's (``build_buffer``); each trains its LoRA on its buffer
from the global adapter, and the server averages the two. The control is FedIT
with the matched budget (the workflow's ``fedit_matched``): its clients train
on their demonstration alone, from its own global adapter, for exactly as many
optimizer steps as the Fed-SE client of that round took (``train_from_manifest``
with ``budget=``; read here from that client's ``training.json``, where the
workflow counts them beforehand with ``planned_steps``: the same count,
tests/train/test_run.py), under the same
cosine schedule and the same SFT seed. So what differs between the two is what
they train on — their own successes — not how long. Both final global adapters
then play 20 held-out GoTo test tasks greedily. Episodes end after 6 turns.

SFT cuts at 1,024 tokens, as the embedded default does. Measured on a 2-core
bf16 machine (Intel Xeon with AMX; one thread, with other work on the second
core), 2026-12-01: explored successes 3, 5 and 10 in rounds 1-3 (of 16 a
round); steps per client [3, 2], [4, 5], [9, 9]; held out, Fed-SE 12 of 20 and
matched FedIT 7 (16 min; it prints the counts). Broken on purpose twice:

- the success filter keeping failures (``build_buffer`` selecting every
  explored episode): the check that a buffer gains exactly its explored
  successes stops it in round 1 (8 episodes added per client); with that check
  removed, the learning margin itself fails, reversed: explored successes 3, 3,
  3; steps [6, 7], [12, 12], [19, 17]; held out, Fed-SE 3 of 20 against matched
  FedIT 11 (28 min with three other jobs on the two cores);
- the explored episodes replaced by as many extra steps on the demonstration
  (Fed-SE trains on its seed buffer for the steps its real buffer would have
  given): both chains then take the same steps on the same data from the same
  seeds, and held out both solved 11 of 20 (explored successes 3, 8, 6), so
  the margin fails (16 min).
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
from evoflow.train.run import budget_steps, train_from_manifest

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


def federated_round(root, round, sources, start, budgets=None):
    """Each client trains on its source manifest from ``start`` (with
    ``budgets``, for as many steps as that client adapter's job took); the mean."""
    clients = []
    for k, manifest in enumerate(sources):
        folder = root / f"r{round}" / f"c{k}"
        sft = {**SFT, "seed": 100 * round + k}
        budget = budget_steps(budgets[k]) if budgets else None
        train_from_manifest(manifest, MODEL, folder, sft, start, progress=False,
                            budget=budget)  # fmt: skip
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


def test_fedse_explored_successes_lift_held_out_success_above_matched_fedit(tmp_path):
    policy = make_policy("hf", MODEL, max_context=2048, batch_size=WIDTH)
    try:
        seeds = seed_manifests(tmp_path)
        buffers, fedse, matched, found, steps = list(seeds), None, None, [], []
        for round in range(1, ROUNDS + 1):
            infos = explore_round(policy, tmp_path / "fedse", round, buffers, fedse)
            found.append(sum(i["explored_successes"] for i in infos))
            for info in infos:  # the filter: explored successes, and only they
                assert info["added_episodes"] == info["explored_successes"]
            fedse = federated_round(tmp_path / "fedse", round, buffers, fedse)
            clients = [
                tmp_path / "fedse" / f"r{round}" / f"c{k}" for k in range(CLIENTS)
            ]
            matched = federated_round(
                tmp_path / "matched", round, seeds, matched, clients
            )
            steps.append([budget_steps(c) for c in clients])
            assert steps[-1] == [budget_steps(tmp_path / "matched" / f"r{round}" / f"c{k}")
                                 for k in range(CLIENTS)]  # fmt: skip
        tasks = eval_tasks(ENV, TEST, 0, strata=STRATA)
        held = {name: sum(e.success for e in rollouts(policy, tasks, adapter, 0.0, 0, "test"))
                for name, adapter in (("fedse", fedse), ("matched", matched))}  # fmt: skip
    finally:
        policy.close()
    kept = load_episodes(buffers[0], columns=["success", "source"])
    print(f"explored successes by round {found}; steps {steps}; held-out {held}")
    assert sum(found) > 0 and all(kept["success"].to_pylist())
    assert held["fedse"] >= held["matched"] + MARGIN, (
        f"Fed-SE solved {held['fedse']} of {TEST} held-out GoTo tasks, FedIT at its "
        f"budget {held['matched']}: explored successes did not lift held-out success "
        "beyond what as many steps on the demonstrations give"
    )

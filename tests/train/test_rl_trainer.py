"""The RL trainer: PPO's advantages across turns, faulty samples, spans that
resume bit-identically after a kill -9."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from evoflow.envs.base import EnvError, Step
from evoflow.envs.doors import DoorsEnv
from evoflow.policy.hf import HFPolicy
from evoflow.store.shards import read_shard
from evoflow.train.rl.advantages import masked_whiten
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.data import RLBatch
from evoflow.train.rl.groups import first_groups, mixed_groups
from evoflow.train.rl.schedule import HorizonSchedule
from evoflow.train.rl.trainer import (
    ADAPTER,
    METRICS,
    ROLLOUTS,
    STATE,
    Span,
    TaskPool,
    run_span,
)
from evoflow.train.rl.update import token_advantages
from tests.helpers import make_episode


def two_turn_batch() -> RLBatch:
    """One trajectory, two assistant turns of 2 generated tokens each (rows)."""
    mask = torch.tensor([[0, 1, 1, 0], [0, 0, 1, 1]], dtype=torch.float32)
    return RLBatch(torch.zeros(2, 4, dtype=torch.long), torch.ones(2, 4, dtype=torch.long),
                   mask, torch.zeros(2, 4), torch.tensor([0, 0]))  # fmt: skip


@pytest.mark.parametrize(
    ("lam", "expected"),
    [
        # λ = 1: every token's advantage is R − V(s_t), R = 1
        (1.0, [[0, 0.9, 0.8, 0], [0, 0, 0.7, 0.6]]),
        # λ = 0: V(s_{t+1}) − V(s_t) across the turn boundary, R − V on the last
        (0.0, [[0, 0.1, 0.1, 0], [0, 0, 0.1, 0.6]]),
    ],
)
def test_ppo_gae_runs_over_the_trajectory_across_its_turns(lam, expected):
    batch = two_turn_batch()
    values = torch.tensor([[0, 0.1, 0.2, 0], [0, 0, 0.3, 0.4]])
    advantages, returns = token_advantages(batch, torch.tensor([1.0]), torch.tensor([0]),
                                           "ppo", values, 1.0, lam)  # fmt: skip
    expected = torch.tensor(expected)  # raw GAE; the trainer whitens it (hand-worked
    # in test_rl_update.py), the returns stay raw
    torch.testing.assert_close(advantages, masked_whiten(expected, batch.loss_mask))
    torch.testing.assert_close(returns, expected + values * batch.loss_mask)


class FaultyDoors(DoorsEnv):
    """Doors whose task 101 pays NaN for any reply and whose task 102 crashes."""

    def _reset(self, task_id: str) -> str:
        if task_id == "102":
            raise EnvError("simulator died")
        self.task = task_id
        return super()._reset(task_id)

    def invalid_reply(self, reason: str, format_name: str | None = None) -> Step:
        step = super().invalid_reply(reason, format_name)
        return (
            Step(step.observation, math.nan, True, False)
            if self.task == "101"
            else step
        )

    def _step(self, action: str) -> Step:
        step = super()._step(action)
        return (
            Step(step.observation, math.nan, True, False)
            if self.task == "101"
            else step
        )


def tiny_setup(factory=DoorsEnv, tasks=("100", "101", "102", "103")):
    policy = HFPolicy("tiny-random-llama", max_context=512)
    pool = TaskPool({"doors": factory}, [("doors", t) for t in tasks])
    config = RLConfig(samples_per_task=2, tasks_per_step=len(tasks), max_new_tokens=4,
                      learning_rate=1e-3, width=8, lora_r=4, lora_alpha=8)  # fmt: skip
    return policy, pool, config


def span(start: int, steps: int) -> Span:
    return Span("tiny-random-llama", "t", "grpo", start, steps, HorizonSchedule((1,)))


def test_nan_rewards_and_env_errors_are_dropped_and_counted(tmp_path):
    policy, pool, config = tiny_setup(FaultyDoors)
    metrics = run_span(span(0, 1), config, pool, policy, tmp_path / "s", progress=False)
    row = metrics["steps"][0]
    assert row["episodes"] == 8 and row["dropped"] == 4  # 2 NaN + 2 errors
    assert row["updated"] and math.isfinite(row["loss"])
    assert row["zero_variance_groups"] == 1.0  # every usable group scored alike
    stored = read_shard(tmp_path / "s" / ROLLOUTS).to_pylist()
    assert len(stored) == 8 and {r["termination"] for r in stored} >= {"error"}


CHILD = """
import sys
from tests.train.test_rl_trainer import span, tiny_setup
from evoflow.train.rl.trainer import run_span
policy, pool, config = tiny_setup()
run_span(span(2, 3), config, pool, policy, sys.argv[1], previous=sys.argv[2], progress=False)
"""


def test_a_span_killed_midway_reruns_to_the_same_adapter(tmp_path):
    # Prepare: an uninterrupted run of spans [0, 2) and [2, 5)
    policy, pool, config = tiny_setup()
    run_span(span(0, 2), config, pool, policy, tmp_path / "a", progress=False)
    run_span(span(2, 3), config, pool, policy, tmp_path / "b", previous=tmp_path / "a",
             progress=False)  # fmt: skip

    # Execute: the second span in a process killed with SIGKILL mid-span, then rerun
    killed = tmp_path / "b2"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(killed), str(tmp_path / "a")],
                             cwd=Path(__file__).parents[2])  # fmt: skip
    live = killed.with_name(f".{killed.name}.live")
    deadline = time.monotonic() + 120
    while not (live / "step-3").exists() and child.poll() is None:
        assert time.monotonic() < deadline, "the span never reached step 3"
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert not killed.exists()  # nothing half-written is left as the output
    run_span(span(2, 3), config, pool, policy, killed, previous=tmp_path / "a",
             progress=False)  # fmt: skip

    # Assert: bit-identical adapter, optimizer state and rollouts
    for name in ("adapter_model.safetensors",):
        assert (killed / ADAPTER / name).read_bytes() == (
            tmp_path / "b" / ADAPTER / name
        ).read_bytes()
    ours, theirs = (
        torch.load(p / STATE, weights_only=False) for p in (killed, tmp_path / "b")
    )
    assert ours["step"] == theirs["step"] == 5
    for a, b in zip(
        ours["optimizer"]["state"].values(),
        theirs["optimizer"]["state"].values(),
        strict=True,
    ):
        assert torch.equal(a["exp_avg"], b["exp_avg"])
    played = [
        read_shard(p / ROLLOUTS).drop_columns(["created_at"])
        for p in (killed, tmp_path / "b")
    ]
    assert played[0].equals(played[1])  # the same episodes, token for token
    # and resuming from the files equals never stopping: one span of all 5 steps
    run_span(span(0, 5), config, pool, policy, tmp_path / "whole", progress=False)
    weights = "adapter_model.safetensors"
    assert (tmp_path / "whole" / ADAPTER / weights).read_bytes() == (
        killed / ADAPTER / weights
    ).read_bytes()
    first = (tmp_path / "a" / ADAPTER / "adapter_model.safetensors").read_bytes()
    assert (
        first != (killed / ADAPTER / "adapter_model.safetensors").read_bytes()
    )  # it trained
    assert (killed / METRICS).is_file()


def test_a_span_must_start_where_its_predecessor_ended(tmp_path):
    policy, pool, config = tiny_setup()
    run_span(span(0, 1), config, pool, policy, tmp_path / "a", progress=False)
    with pytest.raises(ValueError, match="starts at step 3"):
        run_span(
            span(3, 1), config, pool, policy, tmp_path / "b", previous=tmp_path / "a"
        )


def test_dynamic_sampling_keeps_only_groups_whose_rewards_differ():
    # groups: 100 -> {1, 0} mixed; 101 -> {0, 0} flat; 102 -> {1, 1} flat
    episodes = [make_episode(0, task_id=t, reward=r, episode_id=f"{t}-{k}")
                for k, (t, r) in enumerate([("100", 1.0), ("100", 0.0), ("101", 0.0),
                                             ("101", 0.0), ("102", 1.0), ("102", 1.0)])]  # fmt: skip
    assert [e.episode_id for e in mixed_groups(episodes)] == ["100-0", "100-1"]


def test_dynamic_sampling_fills_the_step_to_its_size_not_past_it():
    # three mixed groups arrive, the step takes two: the first two, whole
    pairs = [("100", 1.0), ("100", 0.0), ("103", 0.0), ("103", 1.0), ("105", 1.0),
             ("105", 0.0)]  # fmt: skip
    episodes = [make_episode(0, task_id=t, reward=r, episode_id=f"{t}-{k}")
                for k, (t, r) in enumerate(pairs)]  # fmt: skip
    kept = first_groups(mixed_groups(episodes), 2)
    assert [e.episode_id for e in kept] == ["100-0", "100-1", "103-2", "103-3"]


def test_a_draw_past_the_step_size_adds_only_what_the_step_still_needs(monkeypatch):
    # draw 1 brings one mixed group, draw 2 two more: the step keeps two groups
    from evoflow.train.rl import rollouts

    def scripted_play(policy, factories, jobs, width, progress=False):
        return [make_episode(0, task_id=job.task, reward=float(job.sample),
                             episode_id=f"{job.task}-{job.sample}", env="doors")
                for job in jobs if job.task != "flat"] + [
            make_episode(0, task_id="flat", reward=0.0, episode_id=f"flat-{job.sample}",
                         env="doors") for job in jobs if job.task == "flat"]  # fmt: skip

    monkeypatch.setattr(rollouts, "play", scripted_play)
    draws = iter([["100", "flat"], ["101", "102"]])
    monkeypatch.setattr(
        rollouts, "_draw", lambda *a: [("doors", t) for t in next(draws)]
    )
    monkeypatch.setattr(rollouts, "usable", lambda e: True)
    pool = TaskPool(
        {"doors": DoorsEnv}, [("doors", t) for t in ("100", "101", "102", "flat")]
    )
    config = RLConfig(
        samples_per_task=2, tasks_per_step=2, dynamic_sampling=True, max_draws=3
    )
    _, train, drawn = rollouts.collect(None, pool, span(0, 1), config, 0, None)
    assert drawn == 2
    assert sorted({e.task_id for e in train}) == ["100", "101"]


class ScriptedDoors(DoorsEnv):
    """Doors paying 0 for every reply, except task 100: 0, 1, 0, … by episode."""

    played = itertools.count()

    def _reset(self, task_id: str) -> str:
        self.task = task_id
        self.pays = float(task_id == "100" and next(self.played) % 2 == 1)
        return super()._reset(task_id)

    def invalid_reply(self, reason: str, format_name: str | None = None) -> Step:
        return Step("done", self.pays, True, self.pays > 0)

    def _step(self, action: str) -> Step:
        return Step("done", self.pays, True, self.pays > 0)


def dynamic_setup(tasks, **overrides):
    policy, pool, config = tiny_setup(ScriptedDoors, tasks)
    return policy, pool, replace(config, dynamic_sampling=True, **overrides)


def test_a_step_with_no_reward_signal_draws_again_then_skips_the_update(tmp_path):
    policy, pool, config = dynamic_setup(["101", "102", "103", "104", "105", "106"],
                                         tasks_per_step=2, max_draws=3)  # fmt: skip
    metrics = run_span(span(0, 1), config, pool, policy, tmp_path / "s", progress=False)
    row = metrics["steps"][0]
    assert (row["draws"], row["episodes"], row["trained_groups"]) == (3, 12, 0)
    assert row["updated"] is False and row["zero_variance_groups"] == 1.0
    stored = read_shard(tmp_path / "s" / ROLLOUTS).to_pylist()
    assert len({r["task_id"] for r in stored}) == 6  # no task drawn twice in a step
    start = run_span(
        span(0, 0), config, pool, policy, tmp_path / "init", progress=False
    )
    assert start["steps"] == []
    assert _weights(tmp_path / "s") == _weights(tmp_path / "init")  # untouched


def test_dynamic_sampling_trains_on_the_mixed_group_once_it_is_drawn(tmp_path):
    policy, pool, config = dynamic_setup(["100", "101"], tasks_per_step=1, max_draws=2)
    metrics = run_span(span(0, 1), config, pool, policy, tmp_path / "s", progress=False)
    row = metrics["steps"][0]
    assert row["trained_groups"] == 1 and row["updated"] is True
    assert row["episodes"] == 2 * row["draws"]  # stops at the draw holding task 100


def _weights(folder: Path) -> list[bytes]:
    from safetensors.torch import load_file

    tensors = load_file(folder / ADAPTER / "adapter_model.safetensors")
    return [tensors[k].numpy().tobytes() for k in sorted(tensors)]


def test_the_kl_reference_is_the_policy_rl_starts_from(tmp_path):
    # Prepare: an adapter that differs from the base (one step at a high lr)
    policy, pool, config = tiny_setup()
    run_span(span(0, 1), replace(config, learning_rate=1.0), pool, policy,
             tmp_path / "warm", progress=False)  # fmt: skip
    warm = tmp_path / "warm" / ADAPTER
    # Execute: RL from it, the reference being that start or the base model
    kl = {}
    for mode in ("start", "base"):
        metrics = run_span(span(0, 2), replace(config, reference=mode), pool, policy,
                           tmp_path / mode, init_adapter=warm, progress=False)  # fmt: skip
        kl[mode] = [row["kl"] for row in metrics["steps"]]
    # Assert: before its first update the policy is its start: KL(π‖π) = 0
    assert kl["start"][0] == 0.0 and kl["base"][0] > 0.0
    assert kl["start"][1] > 0.0  # and it moves away from it afterwards
    saved = torch.load(tmp_path / "start" / STATE, weights_only=False)["reference"]
    assert saved is not None and saved["weights"]
    assert (
        torch.load(tmp_path / "base" / STATE, weights_only=False)["reference"] is None
    )
    stored = (tmp_path / "start" / ADAPTER).iterdir()
    assert "reference" not in {p.name for p in stored}  # only the trained adapter
    # a resumed span keeps the reference: spans [0, 2) + [2, 3) == one of [0, 3)
    start = replace(config, reference="start")
    run_span(span(2, 1), start, pool, policy, tmp_path / "resumed",
             previous=tmp_path / "start", progress=False)  # fmt: skip
    run_span(span(0, 3), start, pool, policy, tmp_path / "whole",
             init_adapter=warm, progress=False)  # fmt: skip
    assert _weights(tmp_path / "resumed") == _weights(tmp_path / "whole")


def test_rl_drops_nothing_its_config_does_not_ask_for(tmp_path):
    # Prepare: a start adapter written with dropout on its LoRA input (as SFT's 0.05)
    policy, pool, config = tiny_setup()
    run_span(span(0, 1), replace(config, learning_rate=1.0, lora_dropout=0.5), pool,
             policy, tmp_path / "warm", progress=False)  # fmt: skip
    warm = tmp_path / "warm" / ADAPTER
    assert json.loads((warm / "adapter_config.json").read_text())["lora_dropout"] == 0.5
    # Execute: RL from it with the default (no dropout), the reference its start
    metrics = run_span(span(0, 1), config, pool, policy, tmp_path / "rl",
                       init_adapter=warm, progress=False)  # fmt: skip
    # Assert: trained policy = sampled policy = reference before the update, so the
    # KL is exactly 0 (a dropped LoRA input in either forward makes it positive)
    assert metrics["steps"][0]["kl"] == 0.0
    saved = json.loads((tmp_path / "rl" / ADAPTER / "adapter_config.json").read_text())
    assert saved["lora_dropout"] == 0.0


def test_a_client_span_resumes_its_own_state_on_the_servers_adapter(tmp_path):
    # Prepare: a client's first span from a fresh LoRA (KL reference: the base
    # model), and another adapter that stands for the server's average
    from peft import get_peft_model_state_dict
    from safetensors.torch import load_file

    from evoflow.train.rl.trainer import load_learner

    policy, pool, config = tiny_setup()
    run_span(span(0, 1), config, pool, policy, tmp_path / "own", progress=False)
    run_span(span(0, 1), replace(config, learning_rate=1.0), pool, policy,
             tmp_path / "server", progress=False)  # fmt: skip
    server = load_file(tmp_path / "server" / ADAPTER / "adapter_model.safetensors")
    # Execute
    learner = load_learner(
        span(1, 1), config, tmp_path / "own", tmp_path / "server" / ADAPTER
    )
    # Assert: the server's weights, the client's optimizer (one AdamW step so
    # far) and its reference (the base model, not the server's adapter)
    loaded = get_peft_model_state_dict(learner.model)
    assert loaded.keys() == server.keys()
    assert all(torch.equal(loaded[k].float(), server[k].float()) for k in server)
    steps = {float(s["step"]) for s in learner.optimizer.state_dict()["state"].values()}
    assert steps == {1.0}
    assert learner.reference is None
    with pytest.raises(
        ValueError, match="several adapters resumes from previous alone"
    ):
        load_learner(span(1, 1), config, tmp_path / "own", tmp_path / "server" / ADAPTER,
                     adapters=("role",))  # fmt: skip


@pytest.mark.parametrize("key", ["observation", "history"])
def test_a_gigpo_span_groups_each_step_by_the_observation_it_answered(
    tmp_path, monkeypatch, key
):
    # Multi-turn Maze with the tiny model: every episode's anchor states are
    # the observations before its turns, and a task's samples share the first
    from evoflow.envs import env_factory
    from evoflow.train.rl import trainer

    seen = {}

    def recording(batch, rewards, groups, estimator, *args, **context):
        seen.update(estimator=estimator, anchors=context["anchors"], groups=groups)
        return token_advantages(batch, rewards, groups, estimator, *args, **context)

    monkeypatch.setattr(trainer, "token_advantages", recording)
    policy = HFPolicy("tiny-random-llama", max_context=1024)
    pool = TaskPool({"maze": env_factory("maze")}, [("maze", "0"), ("maze", "1")])
    config = RLConfig(estimator="gigpo", samples_per_task=2, tasks_per_step=2,
                      max_new_tokens=4, learning_rate=1e-3, width=4, lora_r=4,
                      lora_alpha=8, gamma=0.95, anchor_state={"maze": key})  # fmt: skip
    schedule = Span("tiny-random-llama", "t", "gigpo", 0, 1, HorizonSchedule((3,)))
    metrics = run_span(schedule, config, pool, policy, tmp_path / "s", progress=False)
    assert seen["estimator"] == "gigpo" and metrics["steps"][0]["updated"]
    stored = read_shard(tmp_path / "s" / ROLLOUTS).to_pylist()
    turns = [sum(m["role"] == "assistant" for m in r["messages"]) for r in stored]
    assert [len(a) for a in seen["anchors"]] == turns and max(turns) > 1
    firsts = {}
    for anchors, group in zip(seen["anchors"], seen["groups"].tolist(), strict=True):
        firsts.setdefault(group, set()).add(anchors[0])
    assert all(len(f) == 1 for f in firsts.values())
    # the env's anchor-state key reached the estimator: histories join messages
    joined = ["\x1e" in a for anchors in seen["anchors"] for a in anchors]
    assert all(joined) if key == "history" else not any(joined)


def test_anchor_states_are_the_texts_each_training_turn_answered():
    from evoflow.store.schema import Message
    from evoflow.train.rl.groups import anchor_states

    messages = [Message("system", "rules"), Message("user", "room 1"),
                Message("assistant", "go"), Message("user", "room 2"),
                Message("assistant", "look", loss=False), Message("user", "room 2"),
                Message("assistant", "go")]  # fmt: skip
    assert anchor_states(make_episode(messages=messages)) == ["room 1", "room 2"]
    # history: every message before the step, so the two "room 2" steps differ
    # only when what came before them does
    history = anchor_states(make_episode(messages=messages), "history")
    assert history == [
        "rules\x1eroom 1",
        "rules\x1eroom 1\x1ego\x1eroom 2\x1elook\x1eroom 2",
    ]
    with pytest.raises(ValueError, match="anchor state"):
        anchor_states(make_episode(messages=messages), "position")


def test_gigpo_anchor_state_is_chosen_per_env_and_checked():
    from evoflow.train.rl.config import RLConfig

    config = RLConfig(anchor_state={"wordle": "history"})
    assert (
        config.anchor("wordle") == "history" and config.anchor("maze") == "observation"
    )
    assert config.to_dict()["anchor_state"] == {"wordle": "history"}
    assert "anchor_state" not in RLConfig().to_dict()  # caches of runs without it
    with pytest.raises(ValueError, match="anchor_state.maze"):
        RLConfig(anchor_state={"maze": "grid"})

"""SAGE spans on the tiny model: what a span writes, and a resumed run equals
an unbroken one (pool, episodes, adapter)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from evoflow.policy.base import Generation, Policy
from evoflow.policy.hf import HFPolicy
from evoflow.policy.models import resolve_model
from evoflow.sage import pool as pools
from evoflow.sage.problems import math_problem
from evoflow.sage.span import SageSpan, run_sage_span
from evoflow.sage.step import Checker, SageSettings
from evoflow.store.query import connect
from evoflow.store.shards import read_shard
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.trainer import ADAPTER, METRICS, ROLLOUTS, Span
from evoflow.verify import MathVerifier

WEIGHTS = "adapter_model.safetensors"


@pytest.fixture(scope="module")
def checker():
    with MathVerifier(seconds=10) as maths:
        yield Checker(maths)


def setup(tmp_path, roles=("challenger", "planner", "solver", "critic")):
    seed = pools.write(pools.seeded([math_problem(0, 1, i) for i in range(4)]).entries,
                       tmp_path / "span=0" / pools.POOL_FILE)  # fmt: skip
    config = RLConfig(estimator="task_relative", kl_coef=0.0, learning_rate=1e-2,
                      lora_r=4, lora_alpha=8, micro_batch=4)  # fmt: skip
    settings = SageSettings(questions=2, solver_samples=2)

    def job(start, steps):
        span = Span("tiny-random-llama", "t", "sage", start, steps, None)
        return SageSpan(span, settings, tuple(roles), max_new_tokens=6)

    return seed, config, job


def test_a_resumed_sage_run_equals_an_unbroken_one(tmp_path, checker):
    seed, config, job = setup(tmp_path)
    policy = HFPolicy("tiny-random-llama", max_context=1024)
    run_sage_span(job(0, 2), config, [seed], policy, checker, tmp_path / "whole")
    run_sage_span(job(0, 1), config, [seed], policy, checker, tmp_path / "a")
    run_sage_span(job(1, 1), config, [seed, tmp_path / "a" / pools.POOL_FILE], policy,
                  checker, tmp_path / "b", previous=tmp_path / "a")  # fmt: skip
    assert (tmp_path / "whole" / ADAPTER / WEIGHTS).read_bytes() == (
        tmp_path / "b" / ADAPTER / WEIGHTS).read_bytes()  # fmt: skip
    whole = read_shard(tmp_path / "whole" / ROLLOUTS).drop_columns(["created_at"])
    parts = [read_shard(tmp_path / p / ROLLOUTS).drop_columns(["created_at"])
             for p in ("a", "b")]  # fmt: skip
    assert whole.to_pylist() == parts[0].to_pylist() + parts[1].to_pylist()
    # every role played each step: 2 Challenger, 2 Planner, 4 Solver, and a
    # Critic call per plan (+ one per question the random model managed to tag)
    roles = whole.column("agent_role").to_pylist()
    counts = {r: roles.count(r) for r in set(roles)}
    assert counts.pop("critic") >= 4
    assert counts == {"challenger": 4, "planner": 4, "solver": 8}
    assert all(m[-1]["token_ids"] for m in whole.column("messages").to_pylist())
    whole_pool = pools.read([seed, tmp_path / "whole" / pools.POOL_FILE]).entries
    resumed = pools.read([seed, *(tmp_path / p / pools.POOL_FILE for p in ("a", "b"))])
    assert resumed.entries == whole_pool  # the same questions, in the same order


class Scripted(Policy):
    """Fixed replies by role, tokenised with the tiny model's tokenizer so the
    update has tokens to train on; half the Solver answers are right."""

    model_id, max_context = "scripted", 1024

    def __init__(self) -> None:
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(
            resolve_model("tiny-random-llama")
        )

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        out = []
        for i, chat in enumerate(chats):
            text = chat[0]["content"]
            if "Role: Solver" in text:
                reply = f"<answer>{'7' if i % 2 else 'x'}</answer>"
            elif "Role: Critic" in text:
                reply = f"<score>{8 + i % 2}</score>"
            elif "Role: Planner" in text:
                reply = "<plan>1. add</plan>" if i % 2 else "add"
            else:
                reply = (
                    f"<question>What is {3 + i} + 4?</question><answer>{7 + i}</answer>"
                )
            ids = self.tokenizer.encode(reply, add_special_tokens=False)
            out.append(Generation(reply, 1, len(ids), token_ids=ids,
                                  logprobs=[-1.0] * len(ids)))  # fmt: skip
        return out


def test_roles_left_out_of_training_still_play_and_the_pool_is_queryable(
    tmp_path, checker
):
    seed, config, job = setup(tmp_path, roles=("solver",))
    metrics = run_sage_span(job(0, 1), config, [seed], Scripted(), checker,
                            tmp_path / "span=1")  # fmt: skip
    row = metrics["steps"][0]
    assert row["updated"] and set(row["reward"]) == {
        "challenger",
        "planner",
        "solver",
        "critic",
    }
    # only the Solver's 4 replies trained: their generated tokens, nothing else
    solver_tokens = sum(len(Scripted().tokenizer.encode(t, add_special_tokens=False))
                        for t in ["<answer>x</answer>", "<answer>7</answer>"] * 2)  # fmt: skip
    assert row["tokens"] == solver_tokens
    assert row["pool_size"] == 6 and row["offers"]["accepted"] == 2  # scores 8, 9
    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM pool").fetchone()[0] == 6
    assert con.execute("SELECT count(*) FROM pool WHERE span = 1").fetchone()[0] == 2
    assert (
        con.execute("SELECT count(DISTINCT agent_role) FROM episodes").fetchone()[0]
        == 4
    )
    assert (tmp_path / "span=1" / METRICS).is_file()


class Recording(Scripted):
    """Scripted replies; remembers which adapter folder each role played with."""

    def __init__(self) -> None:
        super().__init__()
        self.used: dict[str, set[str]] = {}

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        role = chats[0][0]["content"].split("Role: ", 1)[1].split()[0].lower()
        self.used.setdefault(role.rstrip(".:"), set()).add(Path(adapter).name)
        return super().generate(chats, params, adapter, seeds, keys)


def lora_folder(path, config):
    from evoflow.train.sft_trainer import load_lora_model, portable_config

    torch.manual_seed(1)
    _, model = load_lora_model("tiny-random-llama", config, None)
    for name, parameter in model.named_parameters():
        if "lora_B" in name:  # a non-zero start, so every role's output moves
            torch.nn.init.normal_(parameter, std=0.02)
    model.save_pretrained(path)
    portable_config(path, "tiny-random-llama")
    return path


def weights(folder):
    from safetensors.torch import load_file

    return load_file(folder / WEIGHTS)


def same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_per_role_adapters_each_learn_only_their_own_role(tmp_path, checker):
    seed, config, job = setup(tmp_path, roles=("challenger", "solver"))
    init = lora_folder(tmp_path / "init", config)
    policy = Recording()
    metrics = run_sage_span(replace(job(0, 1), adapters="per_role"), config, [seed],
                            policy, checker, tmp_path / "out", init_adapter=init)  # fmt: skip
    # each role generated with its own folder; the Solver's is the root
    assert policy.used == {"solver": {"step-0"}, "challenger": {"challenger"},
                           "planner": {"planner"}, "critic": {"critic"}}  # fmt: skip
    out, start = tmp_path / "out" / ADAPTER, weights(init)
    assert not same(weights(out), start)  # the Solver trained
    assert not same(weights(out / "challenger"), start)
    assert not same(weights(out / "challenger"), weights(out))
    assert same(weights(out / "planner"), start)  # played, not trained
    assert same(weights(out / "critic"), start)
    updates = metrics["steps"][0]["updates"]
    assert set(updates) == {"challenger", "solver"}
    assert metrics["steps"][0]["tokens"] == sum(u["tokens"] for u in updates.values())


def test_a_resumed_per_role_run_equals_an_unbroken_one(tmp_path, checker):
    seed, config, job = setup(tmp_path)
    init = lora_folder(tmp_path / "init", config)

    def span(start, steps, out, pools_, **kw):
        run_sage_span(replace(job(start, steps), adapters="per_role"), config, pools_,
                      Scripted(), checker, tmp_path / out, **kw)  # fmt: skip

    span(0, 2, "whole", [seed], init_adapter=init)
    span(0, 1, "a", [seed], init_adapter=init)
    span(1, 1, "b", [seed, tmp_path / "a" / pools.POOL_FILE], previous=tmp_path / "a")
    for sub in ("", "challenger", "planner", "critic"):
        whole, resumed = (
            tmp_path / p / ADAPTER / sub / WEIGHTS for p in ("whole", "b")
        )
        assert whole.read_bytes() == resumed.read_bytes(), sub
    assert not same(weights(tmp_path / "whole" / ADAPTER / "planner"), weights(init))


def test_a_bad_adapters_value_is_named():
    with pytest.raises(ValueError, match="sage.adapters must be one of"):
        SageSpan(Span("m", "t", "sage", 0, 1, None), SageSettings(), adapters="each")


def test_advantages_are_whitened_within_each_role(tmp_path, checker, monkeypatch):
    # Task-Relative REINFORCE++ groups a shared-adapter update by role: every
    # episode's group is its role, and all four roles train in one update
    from evoflow.sage import span as spans

    seen = []

    def recording(learner, episodes, config, template, row, group=None):
        seen.append([(group(e), e.agent_role) for e in episodes])
        return real(learner, episodes, config, template, row, group)

    real = spans.learn
    monkeypatch.setattr(spans, "learn", recording)
    seed, config, job = setup(tmp_path)
    run_sage_span(job(0, 1), config, [seed], Scripted(), checker, tmp_path / "span=1")
    [pairs] = seen
    assert all(g == role for g, role in pairs)
    assert {role for _, role in pairs} == {"challenger", "planner", "solver", "critic"}

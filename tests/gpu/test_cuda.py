"""The GPU path on the tiny model: SFT, one RL span per estimator, a SAGE step
and an evaluation through the ``hf`` backend on a CUDA device, in bf16.

Skipped where no CUDA device exists (CI has none); ``tests/gpu/run.sh`` runs
this module on a GPU machine. Each test checks that the work happened on the
device (parameters there, bf16 where asked) and that its numbers are finite
and move — a device mismatch anywhere in the path raises instead.
"""

from __future__ import annotations

import itertools
import json
import math
import os

import pytest
import torch

from evoflow.envs.base import Step
from evoflow.envs.doors import DoorsEnv
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.rollout.expert import expert_demos
from evoflow.train import SFTConfig, train_sft
from evoflow.train.rl.advantages import ESTIMATORS
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.data import collate, token_logprobs, turn_sequences
from evoflow.train.rl.schedule import HorizonSchedule
from evoflow.train.rl.trainer import ADAPTER, METRICS, Span, TaskPool, run_span

# EVOFLOW_TEST_DEVICE=cpu runs the same checks on the CPU (to try the tests).
DEVICE = os.environ.get("EVOFLOW_TEST_DEVICE", "cuda")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        DEVICE == "cuda" and not torch.cuda.is_available(), reason="no CUDA device"
    ),
]
TINY = "tiny-random-llama"


class CoinDoors(DoorsEnv):
    """Doors whose reward is a coin flip on the reply, so groups differ and
    every estimator has a non-zero advantage (the tiny model names no door)."""

    draws = itertools.count()

    def _step(self, action: str) -> Step:
        return Step("The game is over.", float(len(action) % 2), True, False)

    def invalid_reply(self, reason: str, format_name: str | None = None) -> Step:
        self._running = False
        return Step("The game is over.", float(next(self.draws) % 3 == 0), True, False)


@pytest.fixture(scope="module")
def policy() -> HFPolicy:
    return HFPolicy(TINY, max_context=1024, dtype="bfloat16", device=DEVICE)


def test_the_policy_decodes_on_the_device_in_bf16(policy):
    parameter = next(policy.base.parameters())
    assert parameter.device.type == DEVICE and parameter.dtype == torch.bfloat16


def test_sft_trains_on_the_device_under_bf16(tmp_path):
    chats = [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in expert_demos("maze", 4, "t", seed=0)
    ]
    config = SFTConfig(learning_rate=1e-2, epochs=4, batch_size=2, max_length=1024)
    train_sft(chats, TINY, tmp_path / "adapter", config, progress=False)
    info = json.loads((tmp_path / "adapter" / "training.json").read_text())
    losses = info["loss_curve"]
    print("sft", info["precision"], losses)
    assert info["precision"] == "bfloat16"
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_an_rl_span_updates_on_the_device(policy, estimator, tmp_path):
    pool = TaskPool({"doors": CoinDoors},
                    [("doors", t) for t in DoorsEnv().task_ids("train")])  # fmt: skip
    config = RLConfig(estimator=estimator, samples_per_task=4, tasks_per_step=2,
                      max_new_tokens=6, micro_batch=4, width=8, kl_coef=1e-3,
                      precision="bfloat16")  # fmt: skip
    span = Span(TINY, "gpu", estimator, 0, 2, HorizonSchedule((1,)))
    metrics = run_span(span, config, pool, policy, tmp_path / "span", progress=False)
    rows = metrics["steps"]
    print(estimator, [(r["reward"], r.get("loss"), r.get("kl")) for r in rows])
    assert all(r["updated"] and math.isfinite(r["loss"]) for r in rows)
    assert (tmp_path / "span" / ADAPTER / "adapter_config.json").is_file()
    assert json.loads((tmp_path / "span" / METRICS).read_text())["steps"] == rows


def test_a_federated_rl_round_resumes_each_client_on_the_average_on_the_device(
    policy, tmp_path
):
    from evoflow.fed.server_round import server_round
    from evoflow.fed.settings import AggregationSettings
    from evoflow.train.rl.trainer import load_learner

    ids = DoorsEnv().task_ids("train")
    config = RLConfig(samples_per_task=4, tasks_per_step=2, max_new_tokens=6,
                      micro_batch=4, width=8, precision="bfloat16")  # fmt: skip
    start = None
    for round in (1, 2):
        adapters = []
        for k, name in enumerate(("even", "odd")):
            pool = TaskPool({"doors": CoinDoors}, [("doors", t) for t in ids[k::2]])
            output = tmp_path / f"round={round}" / name
            previous = tmp_path / f"round={round - 1}" / name if start else None
            metrics = run_span(Span(TINY, "gpu", "fedrl", round - 1, 1, HorizonSchedule((1,))),
                               config, pool, policy, output, previous=previous,
                               init_adapter=start, progress=False)  # fmt: skip
            assert all(
                r["updated"] and math.isfinite(r["loss"]) for r in metrics["steps"]
            )
            adapters.append(str(output / ADAPTER))
        start = tmp_path / f"round={round}" / "global"
        server_round(adapters, start, tmp_path / f"round={round}.json", "mean",
                     AggregationSettings(), round, 0, TINY, {})  # fmt: skip
    span = Span(TINY, "gpu", "fedrl", 2, 1, HorizonSchedule((1,)))
    learner = load_learner(span, config, tmp_path / "round=2" / "odd", start)
    moments = [v for s in learner.optimizer.state_dict()["state"].values()
               for v in s.values() if torch.is_tensor(v) and v.dim() > 0]  # fmt: skip
    print("fedrl optimizer state on", {str(m.device) for m in moments})
    assert moments and all(m.device.type == DEVICE for m in moments)


def test_sampled_logprobs_match_a_teacher_forced_forward_on_the_device(policy):
    from evoflow.train.sft_trainer import load_lora_model

    spec = RolloutSpec(experiment="gpu", method="t", split="test", source="eval",
                       horizon=2, width=4, seed=3,
                       sampling=SamplingParams(1.0, max_new_tokens=8))  # fmt: skip
    episodes = rollout(policy, DoorsEnv, DoorsEnv().task_ids("test")[:4], spec,
                       progress=False)  # fmt: skip
    tokenizer, model = load_lora_model(TINY, RLConfig(precision="bfloat16"), None)
    batch = collate(turn_sequences(tokenizer, episodes), tokenizer.pad_token_id or 0)
    device = next(model.parameters()).device
    assert device.type == DEVICE
    fields = (getattr(batch, k) for k in batch.__dataclass_fields__)
    batch = type(batch)(*(f if f is None else f.to(device) for f in fields))
    with torch.no_grad():
        forced = token_logprobs(model, batch, torch.bfloat16)
    mask = batch.loss_mask.bool()
    gap = (forced[mask] - batch.old_logprobs[mask]).abs().max().item()
    print("max |sampled - forced| log-prob", gap)
    assert gap < 0.25  # bf16 decoding vs a bf16 teacher-forced forward


def test_a_sage_step_plays_and_updates_on_the_device(policy, tmp_path):
    from evoflow.sage import pool as pools
    from evoflow.sage.problems import math_problem
    from evoflow.sage.span import SageSpan, run_sage_span
    from evoflow.sage.step import Checker, SageSettings
    from evoflow.verify import MathVerifier

    seed = pools.write(pools.seeded([math_problem(0, 1, i) for i in range(4)]).entries,
                       tmp_path / "span=0" / pools.POOL_FILE)  # fmt: skip
    config = RLConfig(estimator="task_relative", kl_coef=0.0, learning_rate=1e-2,
                      lora_r=4, lora_alpha=8, micro_batch=4, precision="bfloat16")  # fmt: skip
    job = SageSpan(Span(TINY, "gpu", "sage", 0, 1, None),
                   SageSettings(questions=2, solver_samples=2), max_new_tokens=6)  # fmt: skip
    with MathVerifier(seconds=10) as maths:
        metrics = run_sage_span(job, config, [seed], policy, Checker(maths),
                                tmp_path / "span=1")  # fmt: skip
    row = metrics["steps"][0]
    print("sage", row.get("reward"), row.get("tokens"))
    assert row["updated"] and row["tokens"] > 0


def test_an_evaluation_runs_through_the_hf_backend_on_the_device(policy, tmp_path):
    from evoflow.envs import env_factory
    from evoflow.rollout.engine import Job, play

    spec = RolloutSpec(experiment="gpu", method="t", split="test", source="eval",
                       horizon=3, width=8, seed=0,
                       sampling=SamplingParams(0.0, max_new_tokens=16))  # fmt: skip
    tasks = ["maze", "wordle"]
    jobs = [Job(env, task, 0, spec) for env in tasks
            for task in env_factory(env)().task_ids("test")[:4]]  # fmt: skip
    episodes = play(policy, {e: env_factory(e) for e in tasks}, jobs, 8, progress=False)
    assert len(episodes) == 8 and all(e.n_turns >= 1 for e in episodes)
    again = play(policy, {e: env_factory(e) for e in tasks}, jobs, 8, progress=False)
    # greedy decoding is reproducible on the device
    assert [e.messages[-2].content for e in episodes] == [
        e.messages[-2].content for e in again
    ]


def test_constrained_replies_read_as_listed_actions_on_the_device(policy):
    from evoflow.envs.formats import reply_format
    from evoflow.policy.base import ActionChoice

    moves = ("move up", "move down", "move left", "move right")
    chat = [{"role": "user", "content": "You are in a maze. Where do you go?"}]
    out = policy.generate([chat] * 8, SamplingParams(1.0, max_new_tokens=24),
                          seeds=list(range(8)), choices=[ActionChoice(moves)] * 8)  # fmt: skip
    assert all(reply_format("react").parse(g.text).action in moves for g in out)


def test_the_vllm_backend_serves_a_mixed_batch_and_seeds_on_the_device(tmp_path):
    # Needs vLLM on the GPU machine (pip install -e '.[gpu]'); the CPU path is
    # tests/policy/test_vllm_backend.py. The checks are that file's, on the tiny
    # model: base rows of a mixed batch equal an unmixed batch's, an adapter row
    # equals the adapter's own batch, and per-request seeds reproduce.
    pytest.importorskip("vllm")
    from evoflow.policy.vllm import VLLMPolicy
    from tests.adapters import random_lora

    adapter = random_lora(TINY, tmp_path / "lora", 0.5)
    policy = VLLMPolicy(TINY, max_context=1024, max_lora_rank=8,
                        gpu_memory_utilization=0.3)  # fmt: skip
    chats = [[{"role": "user", "content": f"Count to {n}."}] for n in range(8)]
    greedy = SamplingParams(0.0, max_new_tokens=12)
    plain = [g.token_ids for g in policy.generate(chats, greedy)]
    tuned = [g.token_ids for g in policy.generate(chats, greedy, adapter)]
    mixed = [g.token_ids for g in policy.generate(
        chats, greedy, [adapter if i % 2 else None for i in range(8)])]  # fmt: skip
    assert tuned != plain
    assert mixed == [tuned[i] if i % 2 else plain[i] for i in range(8)]
    hot = SamplingParams(1.0, max_new_tokens=12)
    first = [g.token_ids for g in policy.generate(chats, hot, seeds=list(range(8)))]
    again = [g.token_ids for g in policy.generate(chats, hot, seeds=list(range(8)))]
    assert first == again

"""Learning guard of SAGE's Solver on a fixed pool: REINFORCE++ on the seed
problems must raise its greedy pass@1 on held-out problems.

This is not SAGE's loop (``test_sage_learning.py`` guards that): the
Challenger's reply is scripted to carry no question, so no Critic and no
difficulty call is made, nothing enters the pool, and each step is the Solver's
RL on the 40 seed problems. The real span (``run_sage_span``: pool sampling,
verifier rewards, per-role whitening, Task-Relative REINFORCE++ on the LoRA) and
the real evaluation (``evaluate_solver``) on the embedded model, with the
embedded config's settings (``config/sage.yaml``: level-0 maths, 8 questions × 8
Solver samples a step, planning off, lr 2e-4), except that only the Solver
trains (one shared adapter stands for the config's per-role ones), replies are
capped at 48 tokens (the config: 96, and 64 to evaluate), and the warm-up.

The warm-up teaches the Solver's format on the first WARM_DEMOS of the 40 seed
demonstrations (two epochs at lr 1e-3); the RL then samples all 40, most of
which the Solver has not been shown. The config's warm-up (all 40, one epoch) is
not what this guards: warmed up so, the Solver answers about 90 % of its
training samples right from the first step at an entropy of 0.02–0.08 a token,
most groups of 8 carry no advantage, and whether held-out pass@1 rose depended
on the sampling seeds (trainer seed 0: 26 / 27 / 28 / 27 problems after 0 / 2 /
4 / 6 steps, a failure; seed 1: 26 / 27 / 28 / 32 after 6). SAGE's five-seed
study points the same way: the config's Solver RL on the seed pool ends 5.75 points
below its warm-up, not resolved (``docs/notes/2026-12-06-sage-study.md``).

Held-out pass@1 (40 level-0 problems, none sharing a fact with a seed problem:
``evoflow.sage.facts``) is read after 2, 4 and 6 steps; the test passes at the
first checkpoint that reaches the warm-up Solver's + GAIN problems. Measured on
a 2-core bf16 machine (one thread, beside other jobs), problems solved after
0 / 2 / 4 / 6 steps with trainer seed 0 (the test's): 18 / 27 / 29 / 29 (30 after 8);
with seed 1, 18 / 24 after 2 steps (one above the bar). Either passes after 2 steps.

Broken twice on purpose, the span's checker changed (the evaluation's not): the
reward negated (``1 - correct``): 18 / 13 after 2 steps, and the test fails;
the reward made irrelevant (a coin that comes up 1 six times in ten, whatever
the answer): 18 / 17 / 15 / 17 after 0 / 2 / 4 / 6 steps, and the test fails, so
a half-taught Solver does not reach the bar by steadying its format alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evoflow.policy.base import Generation, Policy
from evoflow.policy.hf import HFPolicy
from evoflow.sage import facts, warmup
from evoflow.sage import pool as pools
from evoflow.sage.data import DataSettings, eval_problems, seed_problems
from evoflow.sage.evaluate import evaluate_solver
from evoflow.sage.span import SageSpan, run_sage_span
from evoflow.sage.step import Checker, SageSettings
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.trainer import ADAPTER, Span
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_trainer import train_sft
from evoflow.verify import MathVerifier

pytestmark = pytest.mark.slow
MODEL = "smollm2-135m-instruct"
DATA = DataSettings(math_per_level=40, math_levels=(0,), code=0,
                    eval_math_per_level=40, eval_math_levels=(0,), eval_humaneval=0)  # fmt: skip
SETTINGS = SageSettings(questions=8, solver_samples=8, planning=False)
TRAINER = RLConfig(seed=0, estimator="task_relative", kl_coef=0.0, entropy_coef=0.0,
                   learning_rate=2e-4, micro_batch=8)  # fmt: skip
SPAN_STEPS, SPANS = 2, 3  # held-out pass@1 read after 2, 4 and 6 steps
GAIN = 5  # held-out problems solved more than by the warm-up Solver
WARM_DEMOS, WARM_EPOCHS = 10, 2  # the format, not the pool
LABELS = {"experiment": "learning", "method": "sage", "model": MODEL, "round": 0}


class SolverPlays(Policy):
    """The embedded model, except that the Challenger proposes nothing."""

    model_id, max_context = MODEL, 1024

    def __init__(self, model: HFPolicy) -> None:
        self.model = model

    def generate(
        self, chats, params, adapter=None, seeds=None, keys=None, choices=None
    ):
        if chats and "Role: Challenger" in chats[0][0]["content"]:
            return [Generation("no question", 1, 2) for _ in chats]
        return self.model.generate(chats, params, adapter, seeds, keys, choices)


def solved(policy, adapter: Path, problems, checker) -> int:
    _, episodes = evaluate_solver(policy, adapter, problems, checker, 48, LABELS)
    return sum(e.success for e in episodes)


def curve(tmp_path, stop_early: bool = True) -> list[int]:
    """Held-out problems solved after the warm-up and after each span."""
    seeds, held_out = seed_problems(DATA, 0), eval_problems(DATA, 0)
    assert len(seeds) == 40 and len(held_out) == 40
    assert facts.shared(seeds, held_out) == 0
    pool_file = pools.write(pools.seeded(seeds).entries, tmp_path / "pool.parquet")
    chats = [c for c in warmup.demos(seeds, 0) if "Role: Solver" in c[0]["content"]]
    assert len(chats) == len(seeds)
    warm = tmp_path / "warm"
    taught = SFTConfig(seed=0, epochs=WARM_EPOCHS, learning_rate=1e-3)
    train_sft(chats[:WARM_DEMOS], MODEL, warm, taught)
    model = HFPolicy(MODEL, max_context=1024)
    with MathVerifier(seconds=10) as maths:
        checker = Checker(maths)
        before = solved(model, warm, held_out, checker)
        found, previous = [before], None
        for k in range(SPANS):
            span = Span(MODEL, "learning", "sage", k * SPAN_STEPS, SPAN_STEPS, None)
            job = SageSpan(span, SETTINGS, ("solver",), max_new_tokens=48)
            out = tmp_path / f"span-{k}"
            run_sage_span(job, TRAINER, [pool_file], SolverPlays(model), checker, out,
                          previous=previous,
                          init_adapter=None if previous else warm)  # fmt: skip
            found.append(solved(model, out / ADAPTER, held_out, checker))
            previous = out
            if stop_early and found[-1] >= before + GAIN:
                break
    return found


def test_solver_rl_on_the_seed_pool_raises_held_out_pass_at_1(tmp_path):
    found = curve(tmp_path)
    assert found[-1] >= found[0] + GAIN, f"held-out problems solved by step: {found}"

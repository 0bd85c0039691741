"""The RL family's wiring, called directly (no Snakemake)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evoflow.config import validate_config
from evoflow.envs import split_ids
from evoflow.envs.babyai import BabyAIEnv
from evoflow.errors import ConfigError
from evoflow.methods import Layout, methods_from_config, rl
from evoflow.train.rl.run import fixed_set, training_tasks

LAYOUT = Layout("r")


def methods(**settings) -> dict:
    config = validate_config({
        "experiment": "x", "envs": {"babyai": {}, "textcraft": {}},
        "rl": settings,
        "methods": {"agenttraj_sft": {}, "agentgym_rl": {}, "scalinginter_rl": {},
                    "reinforce": {"kind": "agentgym_rl",
                                  "rl": {"trainer": {"estimator": "reinforce_pp"}}}},
    })  # fmt: skip
    return methods_from_config(config)


def test_paper_defaults_and_spans():
    m = methods()["scalinginter_rl"]
    config = rl.trainer_config(m, seed=0)
    assert (config.estimator, config.learning_rate, config.samples_per_task) == (
        "grpo",
        1e-6,
        8,
    )
    assert (config.temperature, config.kl_coef, config.clip) == (1.0, 1e-3, 0.2)
    # 300 steps in spans of 50: six jobs, each evaluated, plus the start (round 0)
    assert m.rounds == 6 and m.eval_rounds == [0, 1, 2, 3, 4, 5, 6]
    assert rl.span_range(m, 1) == (0, 50) and rl.span_range(m, 6) == (250, 50)
    assert rl.schedule(m).horizons == (10, 20, 30)
    assert rl.schedule(methods()["agentgym_rl"]) is None  # each env's own max_turns
    short = replace(m, kind=methods()["agentgym_rl"].kind,
                    options={**m.options, "horizon": 5})  # fmt: skip
    assert [rl.schedule(short).horizon(s) for s in (0, 299)] == [5, 5]


def test_a_last_short_span_and_a_method_override():
    found = methods(steps=7, span_steps=3, horizons=[6, 13, 20], phase_steps=2)
    m = found["scalinginter_rl"]
    assert m.rounds == 3 and rl.span_range(m, 3) == (6, 1)
    assert [rl.schedule(m).horizon(s) for s in range(6)] == [6, 6, 13, 13, 20, 20]
    assert rl.trainer_config(found["reinforce"], 0).estimator == "reinforce_pp"


def test_spans_chain_from_the_init_adapter():
    m = methods(init="agenttraj_sft", steps=4, span_steps=2)["agentgym_rl"]
    assert rl.span_inputs(LAYOUT, m, 1) == {
        "init": "r/agenttraj_sft/round=1/global/adapter"
    }
    assert rl.span_inputs(LAYOUT, m, 2) == {
        "adapter": "r/agentgym_rl/round=1/global/adapter",
        "state": "r/agentgym_rl/round=1/global/state.pt",
    }
    assert rl.eval_adapters(LAYOUT, m, 0, []) == {
        "global": "r/agenttraj_sft/round=1/global/adapter"
    }
    fresh = methods(steps=4, span_steps=2)["agentgym_rl"]
    assert (
        rl.span_inputs(LAYOUT, fresh, 1) == {}
        and rl.eval_adapters(LAYOUT, fresh, 0, []) == {}
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"horizons": [10, 5]}, "horizons must increase"),
        ({"init": "nothing"}, "'nothing' is not a configured method"),
        (
            {"trainer": {"estimator": "grpo", "samples_per_task": 1}},
            "samples_per_task must be >= 2",
        ),
        (
            {"train_subsets": {"webshop": ["x"]}},
            "train_subsets names envs not configured",
        ),
    ],
)
def test_bad_settings_are_named(settings, message):
    with pytest.raises((ConfigError, ValueError), match=message):
        methods(**settings)


def test_training_tasks_come_from_the_named_subsets_only():
    envs = {"babyai": {"remote": None}, "textcraft": {"remote": None}}
    tasks = training_tasks(envs, {"babyai": ["goto"]})
    babyai = [t for env, t in tasks if env == "babyai"]
    # BabyAI's train split holds 20 tasks of each of the 11 GoTo levels (800 in all)
    assert len(babyai) == 220
    assert all(BabyAIEnv.stratum(t) == "goto" for t in babyai)
    assert len(tasks) - 220 == len(split_ids("textcraft", "train"))  # untouched
    with pytest.raises(
        ValueError,
        match=r"rl.train_subsets.babyai: babyai has no stratum 'gotox'; its strata are",
    ):
        training_tasks(envs, {"babyai": ["gotox"]})
    # a level (BabyAI's subset) selects its 20 training tasks (800 / 40 levels)
    levels = training_tasks(envs, {"babyai": ["GoToRedBall", "GoToObjS6"]})
    assert len([t for env, t in levels if env == "babyai"]) == 40


def test_a_fixed_training_set_is_a_seeded_draw_in_order():
    envs = {"babyai": {"remote": None}}
    tasks = training_tasks(envs, {"babyai": ["GoToRedBall", "GoToObjS6"]})
    chosen = fixed_set(tasks, 6, seed=0)
    assert len(set(chosen)) == 6 and set(chosen) <= set(tasks)
    assert chosen == sorted(chosen, key=tasks.index)  # kept in split order
    assert chosen == fixed_set(tasks, 6, seed=0) != fixed_set(tasks, 6, seed=1)
    assert fixed_set(tasks, 100, seed=0) == tasks and fixed_set(tasks, None, 0) == tasks


def test_round_0_is_the_init_methods_final_evaluation_run_once():
    from evoflow.methods.base import evaluated_as, evaluation_files

    linked = methods(init="agenttraj_sft", span_steps=100)
    m = linked["agentgym_rl"]
    assert evaluated_as(m, 0) == ("agenttraj_sft", 1)  # the SFT adapter, as evaluated
    assert evaluated_as(m, 2) == ("agentgym_rl", 2)
    files = evaluation_files(LAYOUT, m, ["babyai"])
    assert files[0] == "r/agenttraj_sft/round=1/eval/env=babyai/metrics.json"
    assert not any("agentgym_rl/round=0" in f for f in files)
    # from the base model (no init), round 0 is the method's own evaluation
    assert evaluated_as(methods()["agentgym_rl"], 0) == ("agentgym_rl", 0)

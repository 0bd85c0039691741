"""RL settings: AgentGym-RL's defaults, and bad values named."""

from __future__ import annotations

import pytest

from evoflow.train.rl.config import RLConfig


def test_defaults_are_agentgym_rls():
    config = RLConfig()
    assert (config.estimator, config.learning_rate, config.samples_per_task) == (
        "grpo", 1e-6, 8)  # fmt: skip
    assert (config.kl_coef, config.clip, config.temperature) == (1e-3, 0.2, 1.0)


@pytest.mark.parametrize(
    "change, named",
    [
        ({"estimator": "a2c"}, "estimator"),
        ({"samples_per_task": 1}, "compares samples"),
        ({"learning_rate": 0}, "learning_rate"),
        ({"lam": 1.5}, "lam"),
        ({"micro_batch": 0}, "micro_batch"),
        ({"micro_tokens": -1}, "micro_tokens"),
        ({"lora_dropout": 1.0}, "lora_dropout"),
    ],  # fmt: skip
)
def test_bad_settings_are_named(change, named):
    with pytest.raises(ValueError, match=named):
        RLConfig(**change)


def test_reinforce_pp_may_sample_once_per_task():
    assert RLConfig(estimator="reinforce_pp", samples_per_task=1).samples_per_task == 1

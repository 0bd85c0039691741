"""The SAGE family's wiring, called directly (no Snakemake)."""

from __future__ import annotations

import pytest

from evoflow.config import validate_config
from evoflow.errors import ConfigError
from evoflow.methods import Layout, methods_from_config, sage

LAYOUT = Layout("r")


def configure(methods=None, **section) -> dict:
    return validate_config({
        "experiment": "x", "envs": {}, "sage": section,
        "methods": methods or {"sage": {}, "sage_wo_critic": {"sage": {"steps": 4}}},
    })  # fmt: skip


def test_paper_defaults_spans_and_the_roles_each_kind_trains():
    methods = methods_from_config(configure())
    full, ablation = methods["sage"], methods["sage_wo_critic"]
    assert full.rounds == 10 and ablation.rounds == 1  # 200 / 20; 4 steps, one span
    assert sage.span_range(ablation, 1) == (0, 4)
    assert sage.train_roles(full) == ("challenger", "planner", "solver", "critic")
    assert sage.train_roles(ablation) == ("challenger", "planner", "solver")
    config = sage.trainer_config(full.options, 0)
    assert (config.estimator, config.kl_coef) == (
        "task_relative",
        0.0,
    )  # KL off (Tab. 4)
    assert full.eval_rounds == list(range(11))  # round 0 is the warm-up model


def test_spans_chain_and_carry_every_earlier_pool_file():
    method = methods_from_config(configure(steps=6, span_steps=2))["sage"]
    first = sage.span_inputs(LAYOUT, method, 1)
    assert first == {
        "pools": ["r/sage_data/pool.parquet"],
        "init": "r/sage_warmup/adapter",
    }
    third = sage.span_inputs(LAYOUT, method, 3)
    assert third["pools"] == ["r/sage_data/pool.parquet", "r/sage/round=1/global/pool.parquet",
                              "r/sage/round=2/global/pool.parquet"]  # fmt: skip
    assert third["state"] == "r/sage/round=2/global/state.pt"
    cold = methods_from_config(configure(warmup=None))["sage"]
    assert "init" not in sage.span_inputs(LAYOUT, cold, 1)
    assert sage.eval_adapter(LAYOUT, cold, 0) is None


@pytest.mark.parametrize(("section", "message"), [
    ({"trainer": {"estimator": "grpo"}}, "task_relative"),
    ({"trainer": {"learnin_rate": 1e-3}}, "learnin_rate"),
    ({"norm": "half"}, "norm"),
    ({"data": {"code": 99}}, "code"),
])  # fmt: skip
def test_bad_settings_are_named(section, message):
    with pytest.raises(ConfigError, match=message):
        configure(**section)


def test_env_methods_need_envs_and_sage_alone_needs_none():
    with pytest.raises(ConfigError, match="play environments"):
        configure(methods={"sage": {}, "pretrained": {}})
    assert list(configure(methods={"sage": {}})["methods"]) == ["sage"]

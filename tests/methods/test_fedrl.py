"""The federated RL family's wiring, called directly (no Snakemake)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evoflow.config import validate_config
from evoflow.errors import ConfigError
from evoflow.methods import Layout, fedrl, methods_from_config, rl

LAYOUT = Layout("r")


def methods(rl_settings=None, **entry) -> dict:
    config = validate_config({
        "experiment": "x", "envs": {"babyai": {}, "textcraft": {}},
        "fed": {"rounds": 3}, "rl": {"span_steps": 2, **(rl_settings or {})},
        "methods": {"agenttraj_sft": {}, "fedrl": {**entry}},
    })  # fmt: skip
    return methods_from_config(config)


def test_a_round_is_one_span_of_client_steps_and_every_round_is_evaluated():
    m = methods()["fedrl"]
    assert m.rounds == 3 and m.eval_rounds == [0, 1, 2, 3]
    assert fedrl.client_options(m)["steps"] == 6  # 3 rounds x 2 steps
    client = replace(m, options=fedrl.client_options(m))  # what a client span reads
    assert [rl.span_range(client, r) for r in (1, 2, 3)] == [(0, 2), (2, 2), (4, 2)]
    assert rl.schedule(client) is None  # each env's own max_turns
    assert rl.trainer_config(client, 0).estimator == "grpo"
    assert methods(rounds=5)["fedrl"].rounds == 5


def test_clients_start_from_the_init_adapter_then_from_the_average_with_their_state():
    m = methods({"init": "agenttraj_sft"})["fedrl"]
    sft = "r/agenttraj_sft/round=1/global/adapter"
    assert fedrl.client_span_inputs(LAYOUT, m, 1, "babyai") == {"start": sft}
    assert fedrl.client_span_inputs(LAYOUT, m, 3, "babyai") == {
        "start": "r/fedrl/round=2/global/adapter",
        "state": "r/fedrl/round=2/client=babyai/state.pt",
    }
    assert fedrl.eval_adapters(LAYOUT, m, 0, []) == {"global": sft}
    assert fedrl.eval_adapters(LAYOUT, m, 2, []) == {
        "global": "r/fedrl/round=2/global/adapter"
    }
    assert fedrl.client_adapters(LAYOUT, m, 2, ["babyai", "textcraft"]) == [
        "r/fedrl/round=2/client=babyai/adapter", "r/fedrl/round=2/client=textcraft/adapter"
    ]  # fmt: skip
    fresh = methods()["fedrl"]
    assert fedrl.client_span_inputs(LAYOUT, fresh, 1, "babyai") == {}
    assert fedrl.eval_adapters(LAYOUT, fresh, 0, []) == {}  # the base model


def test_the_server_step_and_its_reference():
    m = methods({"init": "agenttraj_sft"}, aggregation={"server_momentum": 0.5})[
        "fedrl"
    ]
    assert fedrl.server_settings(m).server_momentum == 0.5
    assert fedrl.reference_adapter(LAYOUT, m, 1) == [
        "r/agenttraj_sft/round=1/global/adapter"
    ]
    assert fedrl.reference_adapter(LAYOUT, m, 2) == ["r/fedrl/round=1/global/adapter"]
    assert fedrl.reference_adapter(LAYOUT, methods()["fedrl"], 2) == []  # plain mean
    assert "aggregation" not in fedrl.client_options(m)  # clients never see it
    for server in ({"dp_clip": 1.0, "dp_noise": 0.1}, {"server_lr": 0.5}):
        with pytest.raises((ValueError, ConfigError), match="needs rl.init"):
            methods(aggregation=server)


def test_artifacts_are_client_span_folders_adapters_and_comm_records():
    m = methods()["fedrl"]
    files = fedrl.artifacts(LAYOUT, m, ["babyai"])
    assert "r/fedrl/round=3/client=babyai/state.pt" in files
    assert "r/fedrl/round=3/global/comm.json" in files
    assert "r/fedrl/round=0/eval/env=babyai/metrics.json" in files
    assert not any(
        "buffer" in f or "explore" in f for f in files
    )  # no trajectories move

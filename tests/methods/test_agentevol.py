"""The AgentEvol family's wiring, called directly (no Snakemake)."""

from __future__ import annotations

import pytest

from evoflow.config import validate_config
from evoflow.errors import ConfigError
from evoflow.methods import Layout, agentevol, methods_from_config
from evoflow.methods.base import POOLED, evaluated_as
from evoflow.report.evidence import planned_pairs
from evoflow.seeding import derive_seed

ENVS = ["maze", "wordle"]
LAYOUT = Layout("r")


def methods(**settings) -> dict:
    config = validate_config({
        "experiment": "x", "envs": {e: {} for e in ENVS}, "train": {"epochs": 2},
        "agentevol": settings,
        "methods": {
            "agenttraj_sft": {}, "agenttraj_l_sft": {}, "agentevol": {},
            "from_base": {"kind": "agentevol", "agentevol": {"init_from": "base_agent"}},
            "continue": {"kind": "agentevol",
                         "agentevol": {"init_from": "previous", "merge": "accumulate"}},
            "agenttraj_sft_matched": {},
            "matched_continue": {"kind": "agenttraj_sft_matched", "budget_of": "continue"},
        },
    })  # fmt: skip
    return methods_from_config(config)


def test_paper_defaults():
    m = methods()["agentevol"]
    s = agentevol.settings(m)
    assert (s.iterations, s.explore_temperature, s.filter) == (4, 0.7, "reward>=1")
    assert (s.merge, s.init_from, s.base_epochs, s.learn_epochs) == (
        "paper",
        "backbone",
        3,
        1,
    )
    # base agent + four iterations, each evaluated
    assert m.rounds == 4 and m.eval_rounds == [0, 1, 2, 3, 4]


def test_iteration_m_learns_from_the_initial_model_on_demos_and_its_own_successes():
    m = methods()["agentevol"]

    # the base agent: 3 epochs of behaviour cloning on the expert set, from the backbone
    assert agentevol.pooled_manifest(LAYOUT, m, 0) == "r/expert/manifest.json"
    assert agentevol.start_adapter(LAYOUT, m, 0) is None
    assert agentevol.sft(m, 0).epochs == 3
    # iteration 3: explores with iteration 2's agent at temperature 0.7 ...
    assert (
        agentevol.explore_adapter(LAYOUT, m, 3) == "r/agentevol/round=2/global/adapter"
    )
    assert agentevol.explore_sampling(m, {"temperature": 1.0, "width": 4}) == {
        "temperature": 0.7, "width": 4,
    }  # fmt: skip
    # ... keeps reward >= 1 over the expert demos (not iteration 2's buffer) ...
    assert agentevol.buffer_select(m) == "reward>=1"
    assert agentevol.buffer_inputs(LAYOUT, m, 3, "maze") == {
        "seed": "r/expert/env=maze/manifest.json",
        "explored": "r/agentevol/round=3/client=maze/explore.parquet",
    }
    assert agentevol.merged_buffers(LAYOUT, m, 3, ENVS) == [
        "r/agentevol/round=3/client=maze/buffer.json",
        "r/agentevol/round=3/client=wordle/buffer.json",
    ]
    # ... and learns D_3 for 1 epoch from the initial model
    assert (
        agentevol.pooled_manifest(LAYOUT, m, 3)
        == "r/agentevol/round=3/global/dataset.json"
    )
    assert agentevol.start_adapter(LAYOUT, m, 3) is None
    assert agentevol.sft(m, 3).epochs == 1
    assert agentevol.eval_adapters(LAYOUT, m, 3, ENVS) == {
        "global": "r/agentevol/round=3/global/adapter"
    }


def test_the_base_agent_is_agenttraj_sft_trained_under_its_seed():
    # the base agent and AgentTraj-SFT clone the same expert set for
    # base_epochs: with one seed they are one training job, so the
    # difference between AgentEvol and AgentTraj-SFT is the iterations'
    m = methods()
    base, bc = agentevol.sft(m["agentevol"], 0), agentevol.sft(m["agenttraj_sft"], 1)
    assert base == bc and base.seed == derive_seed(0, "sft", 1, POOLED)
    assert agentevol.pooled_manifest(LAYOUT, m["agentevol"], 0) == (
        agentevol.pooled_manifest(LAYOUT, m["agenttraj_sft"], 1)
    )
    # an iteration keeps its own round's seed
    assert agentevol.sft(m["agentevol"], 2).seed == derive_seed(0, "sft", 2, POOLED)
    # so AgentTraj-SFT's adapter and evaluation are round 0, not trained again
    agent, bc_adapter = m["agentevol"], "r/agenttraj_sft/round=1/global/adapter"
    assert agentevol.trained_rounds(agent) == [1, 2, 3, 4]
    assert evaluated_as(agent, 0) == ("agenttraj_sft", 1)
    assert agentevol.explore_adapter(LAYOUT, agent, 1) == bc_adapter
    assert agentevol.explore_adapter(LAYOUT, agent, 2) == (
        "r/agentevol/round=1/global/adapter"
    )


def test_a_base_agent_unlike_agenttraj_sft_is_trained_as_round_0():
    # Prepare: AgentEvol without AgentTraj-SFT, and beside one whose base agent
    # learns for other epochs or another learning rate (its SFT settings differ)
    alone = {"agentevol": {}}
    unlike = {"agenttraj_sft": {}, "agentevol": {"agentevol": {"base_epochs": 2}}}
    other_lr = {"agenttraj_sft": {}, "agentevol": {"train": {"learning_rate": 1e-3}}}
    for entries in (alone, unlike, other_lr):
        m = methods_from_config(validate_config({
            "experiment": "x", "envs": {e: {} for e in ENVS},
            "methods": {**entries, "agenttraj_sft_matched": {}}}))  # fmt: skip
        agent, control = m["agentevol"], m["agenttraj_sft_matched"]

        # Assert: the base agent is AgentEvol's own round 0, for the control too
        assert agentevol.trained_rounds(agent) == [0, 1, 2, 3, 4]
        assert evaluated_as(agent, 0) == ("agentevol", 0)
        assert evaluated_as(control, 0) == ("agentevol", 0)
        own = "r/agentevol/round=0/global/adapter"
        assert agentevol.explore_adapter(LAYOUT, agent, 1) == own
        assert agentevol.artifacts(LAYOUT, agent, ENVS)[0] == own


def test_ablations_continue_from_last_and_accumulate():
    m = methods()
    assert agentevol.start_adapter(LAYOUT, m["from_base"], 3) == (
        "r/agenttraj_sft/round=1/global/adapter"  # its base agent
    )
    assert agentevol.start_adapter(LAYOUT, m["continue"], 3) == (
        "r/continue/round=2/global/adapter"
    )
    assert agentevol.buffer_inputs(LAYOUT, m["continue"], 3, "maze")["previous"] == (
        "r/continue/round=2/client=maze/buffer.json"
    )
    assert "previous" not in agentevol.buffer_inputs(LAYOUT, m["continue"], 1, "maze")


def test_agenttraj_sft_is_behaviour_cloning_once():
    m = methods()["agenttraj_sft"]
    assert m.eval_rounds == [1]
    assert agentevol.pooled_manifest(LAYOUT, m, 1) == "r/expert/manifest.json"
    assert agentevol.sft(m, 1).epochs == 3
    assert agentevol.artifacts(LAYOUT, m, ENVS) == [
        "r/agenttraj_sft/round=1/global/adapter",
        "r/agenttraj_sft/round=1/eval/env=maze/metrics.json",
        "r/agenttraj_sft/round=1/eval/env=wordle/metrics.json",
    ]


def test_agenttraj_l_sft_clones_the_large_expert_set():
    m = methods()["agenttraj_l_sft"]
    assert m.eval_rounds == [1] and agentevol.sft(m, 1).epochs == 3
    assert agentevol.pooled_manifest(LAYOUT, m, 1) == "r/expert_l/manifest.json"
    assert LAYOUT.demos("maze", "expert_l") == "r/expert_l/env=maze/demos.parquet"


def test_artifacts_of_every_iteration():
    m = methods(iterations=2)["agentevol"]
    files = agentevol.artifacts(LAYOUT, m, ENVS)
    # 2 iterations x (2 envs x (shard, buffer) + dataset + adapter); 3 x 2
    # metrics, round 0's AgentTraj-SFT's (its base agent is trained there)
    assert len(files) == 2 * (2 * 2 + 2) + 3 * 2
    assert files[0] == "r/agentevol/round=1/client=maze/explore.parquet"
    assert "r/agentevol/round=2/global/dataset.json" in files
    assert "r/agenttraj_sft/round=1/eval/env=maze/metrics.json" in files


def test_bad_settings_are_named():
    with pytest.raises(ConfigError, match="merge"):
        methods(merge="sometimes")
    with pytest.raises(ConfigError, match="select 'reward>1' is not one of"):
        methods(filter="reward>1")


def test_the_matched_control_shares_the_base_agent_and_copies_each_iterations_steps():
    m = methods(iterations=2)
    matched, chained = m["agenttraj_sft_matched"], m["matched_continue"]
    # round 0 is AgentEvol's base agent (here AgentTraj-SFT's adapter): not
    # trained again, its evaluation reused
    assert agentevol.trained_rounds(matched) == [1, 2]
    assert evaluated_as(matched, 0) == ("agenttraj_sft", 1)
    assert evaluated_as(matched, 2) == ("agenttraj_sft_matched", 2)
    # iteration m: the expert set, for as many steps as AgentEvol's iteration m
    for r in (1, 2):
        assert agentevol.pooled_manifest(LAYOUT, matched, r) == "r/expert/manifest.json"
        # its steps: counted from AgentEvol's iteration-r data set and settings
        manifest, sft = agentevol.budget_job(LAYOUT, matched, m, r)
        assert manifest == f"r/agentevol/round={r}/global/dataset.json"
        assert sft == agentevol.sft(m["agentevol"], r) and sft.epochs == 1
        assert agentevol.start_adapter(LAYOUT, matched, r) is None  # backbone
    assert agentevol.budget_job(LAYOUT, chained, m, 1)[0] == (
        "r/continue/round=1/global/dataset.json"
    )
    assert agentevol.budget_job(LAYOUT, m["agentevol"], m, 1) is None
    # from where the named method starts: continue-from-last chains its own
    assert chained.options["init_from"] == "previous"
    assert (
        agentevol.start_adapter(LAYOUT, chained, 1)
        == "r/agenttraj_sft/round=1/global/adapter"
    )
    assert agentevol.start_adapter(LAYOUT, chained, 2) == (
        "r/matched_continue/round=1/global/adapter"
    )
    # nothing explored, no buffers: two adapters and three evaluated rounds
    files = agentevol.artifacts(LAYOUT, matched, ENVS)
    assert files[:2] == ["r/agenttraj_sft_matched/round=1/global/adapter",
                         "r/agenttraj_sft_matched/round=2/global/adapter"]  # fmt: skip
    assert files[2:4] == ["r/agenttraj_sft/round=1/eval/env=maze/metrics.json",
                          "r/agenttraj_sft/round=1/eval/env=wordle/metrics.json"]  # fmt: skip
    assert len(files) == 2 + 3 * 2 and agentevol.buffers(LAYOUT, matched, ENVS) == []
    # the report compares AgentEvol with it once, AgentEvol first
    pairs = planned_pairs(m)
    assert ("agentevol", "agenttraj_sft_matched") in pairs
    assert ("agenttraj_sft_matched", "agentevol") not in pairs
    assert ("agenttraj_sft_matched", "agenttraj_sft") not in pairs  # its round 0


def test_a_matched_control_must_name_an_agentevol_method():
    with pytest.raises(
        ConfigError, match="'agenttraj_sft' is not a configured agentevol"
    ):
        validate_config({
            "experiment": "x", "envs": {"maze": {}}, "agentevol": {"iterations": 2},
            "methods": {"agenttraj_sft": {}, "agentevol": {},
                        "m": {"kind": "agenttraj_sft_matched", "budget_of": "agenttraj_sft"}},
        })  # fmt: skip
    with pytest.raises(ConfigError, match="budget_of is a setting of kind"):
        validate_config({
            "experiment": "x", "envs": {"maze": {}},
            "methods": {"agentevol": {"budget_of": "agentevol"}},
        })  # fmt: skip

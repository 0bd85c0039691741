"""The Fed-SE family's wiring, called directly (no Snakemake)."""

from __future__ import annotations

from pathlib import Path

from evoflow.config import load_schema, validate_config
from evoflow.methods import ABLATION_KINDS, KINDS, Layout, fedse, methods_from_config
from evoflow.store import ShardMeta, load_episodes, write_shard
from evoflow.store.manifest import build_buffer, write_shards_manifest
from tests.helpers import make_episode

ENVS = ["maze", "wordle"]
METHODS = {
    "pretrained": {}, "local": {}, "centralized": {}, "fedit": {}, "fedse": {},
    "fedse_no_history": {}, "fedse_no_filter": {},
    "late": {"kind": "fedse", "rounds": 5},
}  # fmt: skip


def methods(eval_stride: int = 1) -> dict:
    config = validate_config({
        "experiment": "x", "envs": {e: {} for e in ENVS}, "methods": METHODS,
        "fed": {"rounds": 3, "eval_stride": eval_stride},
    })  # fmt: skip
    return methods_from_config(config)


LAYOUT = Layout("results/x")


def test_a_client_starts_from_the_previous_global_adapter():
    m = methods()

    # Round 1 and non-federated kinds start from the base model
    assert fedse.start_adapter(LAYOUT, m["fedse"], 1) is None
    assert fedse.start_adapter(LAYOUT, m["local"], 1) is None
    assert fedse.start_adapter(LAYOUT, m["centralized"], 1) is None
    # Round t starts from round t-1's global adapter, explorers and FedIT alike
    assert (
        fedse.start_adapter(LAYOUT, m["fedse"], 3)
        == "results/x/fedse/round=2/global/adapter"
    )
    assert (
        fedse.start_adapter(LAYOUT, m["fedit"], 2)
        == "results/x/fedit/round=1/global/adapter"
    )


def test_clients_train_on_their_buffer_or_their_demos():
    m = methods()
    assert fedse.train_manifest(LAYOUT, m["fedse"], 2, "maze") == (
        "results/x/fedse/round=2/client=maze/buffer.json"
    )
    assert fedse.train_manifest(LAYOUT, m["fedit"], 2, "maze") == (
        "results/x/expert/env=maze/manifest.json"
    )
    assert fedse.train_manifest(LAYOUT, m["local"], 1, "wordle") == (
        "results/x/expert/env=wordle/manifest.json"
    )


def test_the_server_averages_one_adapter_per_client():
    m = methods()
    assert fedse.client_adapters(LAYOUT, m["fedse"], 2, ENVS) == [
        "results/x/fedse/round=2/client=maze/adapter",
        "results/x/fedse/round=2/client=wordle/adapter",
    ]
    assert fedse.previous_comm(LAYOUT, m["fedse"], 1) is None
    assert (
        fedse.previous_comm(LAYOUT, m["fedse"], 2)
        == "results/x/fedse/round=1/global/comm.json"
    )
    assert fedse.aggregation(m["fedse"]) == "mean"
    assert fedse.aggregation(methods_from_config(validate_config({
        "experiment": "x", "envs": {"maze": {}}, "methods": {"fedse_weighted": {}},
    }))["fedse_weighted"]) == "weighted"  # fmt: skip


def test_evaluation_adapters_and_rounds():
    m = methods(eval_stride=2)

    assert fedse.eval_adapters(LAYOUT, m["pretrained"], 0, ENVS) == {}
    assert fedse.eval_adapters(LAYOUT, m["local"], 1, ENVS) == {
        "maze": "results/x/local/round=1/client=maze/adapter",
        "wordle": "results/x/local/round=1/client=wordle/adapter",
    }
    assert fedse.eval_adapters(LAYOUT, m["fedse"], 2, ENVS) == {
        "global": "results/x/fedse/round=2/global/adapter"
    }
    # the first round, every eval_stride-th round and always the last one
    assert m["fedse"].eval_rounds == [1, 2, 3]
    assert m["late"].eval_rounds == [1, 2, 4, 5]
    assert m["centralized"].eval_rounds == [1] and m["pretrained"].eval_rounds == [0]
    # without the first round: what the stride names and the last round only
    late_only = methods_from_config(validate_config({
        "experiment": "x", "envs": {"maze": {}}, "methods": {"fedse": {}},
        "fed": {"rounds": 5, "eval_stride": 5, "eval_first": False},
    }))["fedse"]  # fmt: skip
    assert late_only.eval_rounds == [5] and late_only.final_round == 5
    assert fedse.evaluations(LAYOUT, m["pretrained"], ["maze"]) == [
        "results/x/pretrained/round=0/eval/env=maze/metrics.json"
    ]


def test_artifacts_list_every_round_of_every_client():
    m = methods()

    # Fed-SE, 3 rounds x 2 clients: shard, buffer and adapter each, then the
    # server's adapter and comm.json per round, then 3 rounds x 2 envs of metrics
    files = fedse.artifacts(LAYOUT, m["fedse"], ENVS)
    assert len(files) == 3 * (2 * 3 + 2) + 3 * 2
    assert "results/x/fedse/round=3/client=wordle/explore.parquet" in files
    assert len(fedse.artifacts(LAYOUT, m["fedit"], ENVS)) == 3 * (2 + 2) + 3 * 2
    assert len(fedse.artifacts(LAYOUT, m["local"], ENVS)) == 2 + 2
    assert len(fedse.artifacts(LAYOUT, m["centralized"], ENVS)) == 1 + 2
    assert len(fedse.artifacts(LAYOUT, m["pretrained"], ENVS)) == 2
    assert fedse.buffers(LAYOUT, m["fedit"], ENVS) == []


def _shard(path, ids: list[int], successes: set[int]) -> str:
    episodes = [
        make_episode(i, episode_id=f"ep-{i}", success=i in successes) for i in ids
    ]
    write_shard(path, episodes, ShardMeta("x", "h", "tiny", 0))
    return str(path)


def _buffers(tmp_path, method) -> dict[int, set[str]]:
    """Build rounds 1 and 2 of one client's buffer the way the workflow wires them."""
    layout = Layout(str(tmp_path))
    demos = _shard(tmp_path / "demos.parquet", [0, 1], {0, 1})
    write_shards_manifest(layout.expert_manifest("maze"), [demos])
    explored = {1: ([10, 11, 12], {10, 12}), 2: ([20, 21], {21})}
    kept = {}
    for round, (ids, wins) in explored.items():
        inputs = fedse.buffer_inputs(layout, method, round, "maze")
        Path(inputs["explored"]).parent.mkdir(parents=True, exist_ok=True)
        _shard(inputs["explored"], ids, wins)
        out = layout.client(method.name, round, "maze", "buffer.json")
        build_buffer(out, inputs["seed"], inputs["explored"], method.kind.select,
                     inputs.get("previous"))  # fmt: skip
        kept[round] = set(load_episodes(out, ["episode_id"])["episode_id"].to_pylist())
    return kept


def test_round_two_buffer_holds_demos_and_both_rounds_successes(tmp_path):
    m = methods()
    assert _buffers(tmp_path / "a", m["fedse"])[2] == {
        "ep-0",
        "ep-1",
        "ep-10",
        "ep-12",
        "ep-21",
    }
    # w/o History: the demos and this round's successes only
    assert _buffers(tmp_path / "b", m["fedse_no_history"])[2] == {
        "ep-0",
        "ep-1",
        "ep-21",
    }
    # w/o Filtering: every explored episode of both rounds
    assert _buffers(tmp_path / "c", m["fedse_no_filter"])[2] == {
        "ep-0",
        "ep-1",
        "ep-10",
        "ep-11",
        "ep-12",
        "ep-20",
        "ep-21",
    }


def test_one_registry_feeds_schema_titles_and_ablations():
    schema = load_schema()
    kind = schema["properties"]["methods"]["additionalProperties"]["properties"]["kind"]
    assert kind["enum"] == list(KINDS)
    assert KINDS["fedse_weighted"].title == "Fed-SE w/ Weighted Avg"
    assert ABLATION_KINDS == (
        "fedse",
        "fedse_no_history",
        "fedse_no_filter",
        "fedse_weighted",
    )


def test_matched_budget_clients_read_the_exploring_clients_steps():
    # Prepare
    config = validate_config({
        "experiment": "x", "envs": {e: {} for e in ENVS}, "fed": {"rounds": 3},
        "methods": {"fedse": {}, "fedit_matched": {}, "random": {}, "mine": {
            "kind": "fedit_matched", "budget_of": "late"}, "late": {"kind": "fedse"}},
    })  # fmt: skip
    m = methods_from_config(config)

    # Execute / Assert: the same round and env of the method it copies
    # (its buffer and SFT settings, from which the steps are counted)
    assert fedse.budget_job(LAYOUT, m["fedit_matched"], m, 2, "maze") == (
        "results/x/fedse/round=2/client=maze/buffer.json",
        m["fedse"].sft_for(2, "maze"),
    )
    assert fedse.budget_job(LAYOUT, m["mine"], m, 1, "wordle") == (
        "results/x/late/round=1/client=wordle/buffer.json",
        m["late"].sft_for(1, "wordle"),
    )
    assert fedse.budget_job(LAYOUT, m["fedse"], m, 2, "maze") is None
    assert fedse.budget_job(LAYOUT, m["fedit_matched"], m, 2) is None  # pooled
    assert m["random"].options["samples"] == fedse.RANDOM_SAMPLES == 20


def test_a_matched_budget_needs_an_exploring_method_with_its_rounds():
    import pytest

    def resolve(methods):
        config = validate_config({"experiment": "x", "envs": {"maze": {}},
                                  "fed": {"rounds": 3}, "methods": methods})  # fmt: skip
        return methods_from_config(config)

    with pytest.raises(
        ValueError, match=r"budget_of: 'fedit' is not a configured exploring"
    ):
        resolve({"fedit": {}, "fedit_matched": {"budget_of": "fedit"}})
    with pytest.raises(ValueError, match=r"'fedse' runs 2 rounds, fewer than"):
        resolve({"fedse": {"rounds": 2}, "fedit_matched": {}})
    with pytest.raises(
        ValueError, match=r"methods.fedit: budget_of is a setting of kind"
    ):
        resolve({"fedse": {}, "fedit": {"budget_of": "fedse"}})
    with pytest.raises(
        ValueError, match=r"methods.fedse: samples is a setting of kind"
    ):
        resolve({"fedse": {"samples": 3}})

"""AgentGym-RL's DAG on the tiny model: spans chained from an SFT adapter, the
horizon each step used, what a span stores, and resume.

``tiny_rl.yaml``: 3 steps in spans of 2 (span 1 = steps 0-1, span 2 = step 2),
ScalingInter-RL horizons [1, 2] every 2 steps, the fixed-horizon baseline at
each env's own cap (textcraft 3, doors 1), both starting from AgentTraj-SFT.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from evoflow.store.shards import read_shard
from tests.workflow.conftest import ROOT, dry_run_jobs, planned_jobs, run_log, snakemake
from tests.workflow.queue import replay

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_rl.yaml"
RESULTS = "results/tiny-rl"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("rl")
    snakemake(workdir, config=CONFIG)
    return workdir


def steps(run, method: str, span: int) -> list[dict]:
    path = run / f"{RESULTS}/{method}/round={span}/global/metrics.json"
    return json.loads(path.read_text())["steps"]


def test_spans_cover_the_steps_with_the_scheduled_horizons(run):
    horizons = {m: [(s["step"], s["horizon"]) for span in (1, 2) for s in steps(run, m, span)]
                for m in ("agentgym_rl", "scalinginter_rl")}  # fmt: skip
    assert horizons["scalinginter_rl"] == [
        (0, {"textcraft": 1, "doors": 1}), (1, {"textcraft": 1, "doors": 1}), (2, {"textcraft": 2, "doors": 2}),
    ]  # fmt: skip
    assert horizons["agentgym_rl"] == [
        (s, {"textcraft": 3, "doors": 1}) for s in range(3)
    ]
    for method in horizons:
        state = torch.load(run / f"{RESULTS}/{method}/round=2/global/state.pt",
                           weights_only=False)  # fmt: skip
        assert state["step"] == 3


def test_a_span_stores_its_episodes_with_groups_tokens_and_log_probs(run):
    table = read_shard(
        run / f"{RESULTS}/scalinginter_rl/round=2/global/rollouts.parquet"
    )
    rows = table.to_pylist()
    assert len(rows) == 4  # 2 tasks x 2 samples, one step
    assert all(r["group"] and r["round"] == 2 for r in rows)
    assert all(r["n_turns"] <= 2 for r in rows)  # the step's horizon
    replies = [m for r in rows for m in r["messages"] if m["role"] == "assistant"]
    assert replies and all(m["token_ids"] and len(m["logprobs"]) == len(m["token_ids"])
                           for m in replies)  # fmt: skip


def test_rl_starts_from_the_sft_adapter_and_rows_reach_the_report(run):
    table = (run / "reports/tiny-rl/table1.md").read_text()
    assert "| AgentGym-RL |" in table and "| ScalingInter-RL |" in table
    assert "RL after 2 span(s)" in table
    # Round 0 is the SFT adapter RL starts from: AgentTraj-SFT's evaluation, run once
    assert not (run / f"{RESULTS}/agentgym_rl/round=0").exists()
    sft = json.loads(
        (
            run / f"{RESULTS}/agenttraj_sft/round=1/eval/env=textcraft/metrics.json"
        ).read_text()
    )
    assert sft["adapter_sha256"] is not None


def test_the_papers_subset_tables_count_our_final_evaluation(run):
    text = (run / "reports/tiny-rl/agentgym_rl_tables.md").read_text()
    assert "**TextCraft** (AgentGym-RL Table 3" in text
    assert "| paper: ScalingInter-7B | 100.0 | 97.6 | 76.0 | 33.3 | 91.0 |" in text
    cells = {}
    for line in (
        (run / "reports/tiny-rl/agentgym_rl_tables.csv").read_text().split()[1:]
    ):
        env, method, subset, wins, n = line.split(",")
        cells[method, subset] = (int(wins), int(n))
    for name, title in (
        ("agentgym_rl", "AgentGym-RL"),
        ("scalinginter_rl", "ScalingInter-RL"),
    ):
        metrics = json.loads(
            (
                run / f"{RESULTS}/{name}/round=2/eval/env=textcraft/metrics.json"
            ).read_text()
        )  # the pooled cell, from the episodes, equals the evaluation's own count
        assert cells[title, "Overall"] == (metrics["successes"], metrics["episodes"])
        assert f"| {title} | GRPO |" in text  # Table 6
    assert (run / "reports/tiny-rl/figures/rl_training.png").read_bytes()[
        :4
    ] == b"\x89PNG"


def test_no_job_lists_an_input_twice(tmp_path):
    # both RL methods start from AgentTraj-SFT and share its evaluation: the
    # report needs each metrics file once, not once per method that shares it
    out = snakemake(tmp_path, "-n", config=CONFIG).stdout
    for job in dry_run_jobs(out):
        twice = sorted({f for f in job["input"] if job["input"].count(f) > 1})
        assert not twice, f"rule {job['rule']} lists {twice} more than once"


def test_rerun_is_a_no_op_and_a_lost_span_reruns_alone(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy, symlinks=True)
    assert planned_jobs(copy, config=CONFIG) == []
    shutil.rmtree(copy / f"{RESULTS}/scalinginter_rl/round=2/global")
    rules = sorted({rule for rule, _ in planned_jobs(copy, config=CONFIG)})
    assert rules == ["evaluate", "report", "rl_span", "tts_passk", "tts_turns"]
    planned = planned_jobs(copy, config=CONFIG)
    assert [out for rule, out in planned if rule == "rl_span"] == [
        f"{RESULTS}/scalinginter_rl/round=2/global/adapter"
    ]


def test_test_time_scaling_caps_turns_and_samples_k_per_task(run):
    final = f"{RESULTS}/scalinginter_rl/round=2/tts"
    short, long = (read_shard(run / f"{final}/turns={h}/env=textcraft/episodes.parquet").to_pylist()
                   for h in (1, 2))  # fmt: skip
    assert (
        max(r["n_turns"] for r in short) == 1 and max(r["n_turns"] for r in long) <= 2
    )
    # greedy: the longer cap replays the shorter episode and goes on, so success
    # can only grow with the cap (the sweep's invariant)
    for a, b in zip(short, long, strict=True):
        assert a["task_id"] == b["task_id"] and a["messages"][2] == b["messages"][2]
        assert b["success"] >= a["success"]
    sampled = read_shard(
        run / f"{final}/passk/env=textcraft/episodes.parquet"
    ).to_pylist()
    assert sorted(r["sample"] for r in sampled) == [0, 0, 1, 1]
    assert all(r["temperature"] == 1.0 for r in sampled)
    metrics = json.loads(
        (run / f"{final}/passk/env=textcraft/metrics.json").read_text()
    )
    assert set(metrics["pass_at_k"]) == {"1", "2"} and metrics["samples"] == 2
    for figure in ("tts_turns", "tts_passk"):
        assert (run / f"reports/tiny-rl/figures/{figure}.png").read_bytes()[
            :4
        ] == b"\x89PNG"


def test_each_span_is_an_mlflow_run_with_its_steps_as_series(run):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{run / RESULTS / 'mlflow.db'}")
    exp = client.get_experiment_by_name("tiny-rl").experiment_id
    runs = client.search_runs([exp], max_results=1000)
    jobs = {(r.data.tags.get("evoflow.method"), r.data.tags.get("evoflow.round"),
             r.info.run_name) for r in runs if r.data.tags.get("evoflow.level") == "job"}  # fmt: skip
    assert ("agenttraj_sft", "1", "train pooled") in jobs
    for method in ("agentgym_rl", "scalinginter_rl"):
        assert {(method, "1", "rl span"), (method, "2", "rl span")} <= jobs
    (span,) = [r for r in runs if r.info.run_name == "rl span"
               and r.data.tags["evoflow.method"] == "scalinginter_rl"
               and r.data.tags["evoflow.round"] == "2"]  # fmt: skip
    history = client.get_metric_history(span.info.run_id, "horizon.textcraft")
    assert [(m.step, m.value) for m in history] == [(2, 2.0)]  # step 2's horizon
    reward = client.get_metric_history(span.info.run_id, "reward")
    assert [m.value for m in reward] == [steps(run, "scalinginter_rl", 2)[0]["reward"]]
    assert span.data.params["learning_rate"] == "0.001"


def test_every_job_another_waits_on_goes_first(run):
    # a job whose output another job (not a report) reads carries the chain
    # priority, and no job of priority 0 started while one of those waited
    queue = replay(run_log(run))
    assert queue.jumps == [] and queue.unprioritised == []

"""AgentEvol's DAG on the tiny model: what each iteration learns from, and resume.

``tiny_agentevol.yaml`` keeps every explored episode (``filter: reward>=0``),
so the size of each learning set is known by hand whatever the tiny model
does: 2 envs x 2 expert demos, plus 2 envs x 2 explored episodes per iteration.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from evoflow.store import read_manifest
from tests.workflow.conftest import ROOT, planned_jobs, run_log, snakemake
from tests.workflow.queue import parse, replay

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_agentevol.yaml"
DEMOS, EXPLORED = 4, 4  # per iteration: 2 envs x 2 tasks


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("agentevol")
    snakemake(workdir, config=CONFIG)
    return workdir


def training(run, method: str, round: int) -> dict:
    adapter = run / f"results/tiny-agentevol/{method}/round={round}/global/adapter"
    return json.loads((adapter / "training.json").read_text())


def test_table_has_the_agentgym_rows(run):
    table = (run / "reports/tiny-agentevol/table1.md").read_text()
    for title in (
        "Pre-Trained",
        "AgentTraj-SFT",
        "AgentTraj-L-SFT",
        "AgentEvol",
        "AgentEvol (agentevol_continue)",
        "AgentTraj-SFT, matched budget",
        "AgentTraj-SFT, matched budget (matched_continue)",
    ):
        assert f"| {title} |" in table
    assert "AgentEvol after 2 iteration(s)" in table
    assert "LoRA adapter (AgentGym fine-tunes every weight)" in table
    assert "federated methods" not in table
    table3 = (run / "reports/tiny-agentevol/table3.md").read_text()
    assert "| Method | Maze | Wordle |" in table3
    assert "| AgentTraj-L-SFT | " in table3 and "| AgentEvol | " in table3
    figure = run / "reports/tiny-agentevol/figures/agentevol_iterations.png"
    assert figure.read_bytes()[:4] == b"\x89PNG"


def test_no_evaluation_goes_before_a_ready_step_of_a_chain(run):
    # two cores, many ready jobs: exploration and training (what the next
    # iteration waits on) always start first; evaluations fill free cores
    queue = replay(run_log(run))
    assert queue.jumps == [] and queue.unprioritised == []
    # the order was tested: exploration and training went first while an
    # evaluation was ready
    assert {"explore", "train_pooled"} <= set().union(*queue.contested)


def test_each_iteration_learns_the_demos_and_only_its_own_explorations(run):
    # paper: D_m = expert set + iteration m's kept episodes, from the initial model
    for round in (1, 2):
        info = training(run, "agentevol", round)
        assert info["buffer_episodes"] == DEMOS + EXPLORED
        assert info["init_adapter"] is None
        assert info["config"]["epochs"] == 1
    assert training(run, "agenttraj_sft", 1)["buffer_episodes"] == DEMOS  # base
    results = (run / "results/tiny-agentevol").resolve()
    dataset = read_manifest(results / "agentevol/round=2/global/dataset.json")
    shards = sorted(str(Path(s.path).relative_to(results)) for s in dataset.shards)
    assert shards == [
        "agentevol/round=2/client=maze/explore.parquet",
        "agentevol/round=2/client=wordle/explore.parquet",
        "expert/env=maze/demos.parquet",
        "expert/env=wordle/demos.parquet",
    ]


def test_agenttraj_l_sft_learns_the_large_expert_set(run):
    info = training(run, "agenttraj_l_sft", 1)
    assert info["buffer_episodes"] == 2 * 3  # demos_large: 3 per env
    results = (run / "results/tiny-agentevol").resolve()
    pooled = read_manifest(results / "expert_l/manifest.json")
    shards = sorted(str(Path(s.path).relative_to(results)) for s in pooled.shards)
    assert shards == ["expert_l/env=maze/demos.parquet",
                      "expert_l/env=wordle/demos.parquet"]  # fmt: skip


def test_the_base_agent_is_agenttraj_sft(run):
    # the same expert set, epochs and SFT seed: one agent, trained and
    # evaluated once, so AgentEvol's difference from AgentTraj-SFT is its
    # iterations' alone
    results = run / "results/tiny-agentevol"
    for agent in ("agentevol", "agentevol_continue"):
        assert not (results / f"{agent}/round=0").exists()
        # iteration 1 explores with AgentTraj-SFT's adapter ...
        explored = pq.read_table(
            results / f"{agent}/round=1/client=maze/explore.parquet"
        )
        played = pq.read_table(
            results / "agenttraj_sft/round=1/eval/env=maze/episodes.parquet"
        )
        assert set(explored["adapter_sha256"].to_pylist()) == (
            set(played["adapter_sha256"].to_pylist())
        )
    # ... trained with the exploring chain's priority, as its first link (the
    # large expert set's clone, which no chain starts from, keeps the lower one)
    jobs = parse(run_log(run))[0].values()
    priority = {j["output"][0].split("/")[2]: j["priority"]
                for j in jobs if j["rule"] == "train_pooled"}  # fmt: skip
    assert priority["agenttraj_sft"] == priority["agentevol"] == 2
    assert priority["agenttraj_l_sft"] == 1
    # ... and the report reads its evaluation as AgentEvol's round 0
    rows = (run / "reports/tiny-agentevol/outcomes.csv").read_text().splitlines()
    base = sorted(r.split(",", 2)[2] for r in rows if r.startswith("agentevol,0,"))
    bc = sorted(r.split(",", 2)[2] for r in rows if r.startswith("agenttraj_sft,1,"))
    assert base == bc and len(base) == 4  # 2 envs x 2 test tasks


def test_continue_from_last_accumulates_and_chains_adapters(run):
    info = training(run, "agentevol_continue", 2)
    assert info["buffer_episodes"] == DEMOS + 2 * EXPLORED
    assert info["init_adapter"].endswith("agentevol_continue/round=1/global/adapter")


def test_the_matched_control_learns_the_demos_for_agentevols_steps(run):
    for control, agent in (("agenttraj_sft_matched", "agentevol"),
                           ("matched_continue", "agentevol_continue")):  # fmt: skip
        assert not (run / f"results/tiny-agentevol/{control}/round=0").exists()
        for round in (1, 2):
            mine, theirs = training(run, control, round), training(run, agent, round)
            assert mine["optimizer_steps"] == theirs["optimizer_steps"] > 0
            assert mine["buffer_episodes"] == DEMOS
            assert mine["config"]["seed"] == theirs["config"]["seed"]
    assert training(run, "agenttraj_sft_matched", 2)["init_adapter"] is None
    chained = training(run, "matched_continue", 2)["init_adapter"]
    assert chained.endswith("matched_continue/round=1/global/adapter")
    assert training(run, "matched_continue", 1)["init_adapter"].endswith(
        "agenttraj_sft/round=1/global/adapter"  # its base agent
    )
    comparisons = (run / "reports/tiny-agentevol/comparisons.csv").read_text()
    assert "agentevol,agenttraj_sft_matched," in comparisons
    assert "agenttraj_sft_matched,agentevol," not in comparisons


def test_a_lost_iteration_is_redone_alone(run, tmp_path):
    # Prepare: a copy of the finished run without iteration 2's agent
    copy = tmp_path / "run"
    shutil.copytree(run, copy, symlinks=True)
    assert planned_jobs(copy, config=CONFIG) == []
    shutil.rmtree(copy / "results/tiny-agentevol/agentevol/round=2/global/adapter")

    # Execute
    jobs = planned_jobs(copy, config=CONFIG)

    # Assert: that agent is learned again and evaluated, nothing else of any
    # method (the matched control counts its steps from the iteration's data set,
    # which is still there, so it stands)
    touched = sorted({(rule, out.split("/")[2], out.split("/")[3])
                      for rule, out in jobs if out.startswith("results/")})  # fmt: skip
    assert touched == [("evaluate", "agentevol", "round=2"),
                       ("train_pooled", "agentevol", "round=2")]  # fmt: skip
    snakemake(copy, config=CONFIG)
    assert planned_jobs(copy, config=CONFIG) == []

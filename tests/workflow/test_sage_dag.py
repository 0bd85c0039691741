"""SAGE's DAG on the tiny model: data, warm-up, spans, evaluations, report."""

from __future__ import annotations

import json

import pytest

from evoflow.report.seeds import read_report
from evoflow.sage import facts, pool
from evoflow.sage.run import read_problems
from evoflow.store.query import connect
from evoflow.store.shards import read_shard
from tests.workflow.conftest import ROOT, run_log, snakemake
from tests.workflow.queue import replay

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_sage.yaml"
RESULTS = "results/tiny-sage"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("sage")
    snakemake(workdir, "--set-threads", "sage_span=1", "sage_evaluate=1", config=CONFIG)
    return workdir


def test_spans_chain_and_store_every_role(run):
    results = run / RESULTS
    for method in ("sage", "sage_wo_critic"):
        steps = [json.loads((results / f"{method}/round={r}/global/metrics.json")
                            .read_text())["steps"] for r in (1, 2)]  # fmt: skip
        assert [s["step"] for span in steps for s in span] == [0, 1]
        row = steps[0][0]  # per step: the Critic's acceptances and the pool
        assert {
            "critic_accepted",
            "critic_acceptance_rate",
            "joined",
            "pool_size",
        } <= set(row)
        played = read_shard(results / f"{method}/round=2/global/rollouts.parquet")
        assert {"challenger", "planner", "solver", "critic"} <= set(
            played.column("agent_role").to_pylist())  # fmt: skip
    files = [results / "sage_data/pool.parquet",
             *(results / f"sage/round={r}/global/pool.parquet" for r in (1, 2))]  # fmt: skip
    assert len(pool.read(files)) >= 3  # the seed pool: 2 maths + 1 code task
    sets = [read_problems(results / f"sage_data/{name}_problems.json")
            for name in ("eval", "val")]  # fmt: skip
    assert all(sets) and facts.shared(*sets) == 0
    assert facts.shared([e.problem for e in pool.read(files[:1]).entries], sets[1]) == 0


def test_each_round_is_evaluated_and_the_report_has_the_papers_rows(run):
    for r in (0, 1, 2):
        metrics = json.loads(
            (run / RESULTS / f"sage/round={r}/sage_eval/metrics.json").read_text()
        )
        assert set(metrics["accuracy"]) == {"math-L1", "math-L2", "humaneval"}
    text = (run / "reports/tiny-sage/sage_tables.md").read_text()
    assert "Qwen-2.5-7B-Instruct | SAGE | 76.2" in text
    assert "| w/o critic training |" in text and "Base Model (warm-up SFT)" in text
    assert "## Questions accepted per step — ours" in text and "| SAGE | 2 |" in text
    assert (run / "reports/tiny-sage/figures/sage_dynamics.png").stat().st_size > 0
    con = connect(run / "results")
    assert con.execute("SELECT count(*) FROM pool").fetchone()[0] >= 3


def test_the_seed_pool_control_asks_no_question_and_its_pool_never_grows(run):
    results = run / RESULTS / "sage_seed_pool"
    for r in (1, 2):
        steps = json.loads((results / f"round={r}/global/metrics.json").read_text())
        assert [(s["questions"], s["joined"]) for s in steps["steps"]] == [(0, 0)]
        assert len(pool.read([results / f"round={r}/global/pool.parquet"])) == 0
    roles = set(read_shard(results / "round=2/global/rollouts.parquet")
                .column("agent_role").to_pylist())  # fmt: skip
    assert "solver" in roles and "challenger" not in roles


def test_the_report_keeps_per_problem_outcomes_and_the_planned_pairs(run):
    folder = run / "reports/tiny-sage"
    report = read_report(folder)  # what evoflow seeds and phenomena pool
    problems = len(read_problems(run / RESULTS / "sage_data/eval_problems.json"))
    assert set(report.finals) == {"sage", "sage_wo_critic", "sage_seed_pool"}
    assert all(o.envs == ["sage"] and o.episodes == problems
               for o in report.finals.values())  # fmt: skip
    assert set(report.pairs) == {("sage", "sage_seed_pool"), ("sage_wo_critic", "sage")}
    text = (folder / "sage_tables.md").read_text()
    assert "## Paired comparisons — ours" in text
    assert "| SAGE − w/o Challenger (seed pool only) |" in text


def test_every_job_another_waits_on_goes_first(run):
    # a job whose output another job (not a report) reads carries the chain
    # priority, and no job of priority 0 started while one of those waited
    queue = replay(run_log(run))
    assert queue.jumps == [] and queue.unprioritised == []

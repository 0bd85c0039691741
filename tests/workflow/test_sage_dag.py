"""SAGE's DAG on the tiny model: data, warm-up, spans, evaluations, report."""

from __future__ import annotations

import json

import pytest

from evoflow.sage import facts, pool
from evoflow.sage.run import read_problems
from evoflow.store.query import connect
from evoflow.store.shards import read_shard
from tests.workflow.conftest import ROOT, snakemake

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

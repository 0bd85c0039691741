"""Helmsman's DAG: substitute data, baselines, the agents' phases and the
report, then resume (a rerun does nothing; a deleted run reruns alone)."""

from __future__ import annotations

import json

import pytest

from tests.workflow.conftest import ROOT, planned_jobs, run_log, snakemake
from tests.workflow.queue import replay

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_helmsman.yaml"
HELM = "results/tiny-helmsman/helmsman"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("helmsman")
    snakemake(workdir, config=CONFIG)
    return workdir


def test_every_baseline_ran_and_scored_its_task(run):
    fednova = json.loads(
        (run / f"{HELM}/Q4/baseline=fednova/seed=0/run.json").read_text()
    )
    assert (
        fednova["verdict"] == "SUCCESS" and len(fednova["rounds"]) == 6
    )  # rounds 0 to 5
    continual = json.loads(
        (run / f"{HELM}/Q16/baseline=fedavg/seed=0/run.json").read_text()
    )
    assert 0 <= continual["forgetting"] <= 1 and "metric" in continual
    assert not (run / f"{HELM}/Q16/baseline=fednova").exists()
    weit = json.loads(
        (run / f"{HELM}/Q16/baseline=fedweit/seed=0/run.json").read_text()
    )
    assert weit["verdict"] == "SUCCESS", weit["problems"]  # Q16's specialised: FedWeIT


def test_the_agents_phases_leave_their_artifacts(run):
    plan = json.loads((run / f"{HELM}/Q4/plan.json").read_text())
    status = json.loads((run / f"{HELM}/Q4/status.json").read_text())
    assert plan["path"][0] == "plan" and status["status"] in (
        "FAIL_PLAN",
        "FAIL_BUDGET",
    )
    assert (run / f"{HELM}/Q4/calls.jsonl").read_text().count('"agent": "planner"') == 1
    generated = json.loads((run / f"{HELM}/Q4/generated/seed=0/run.json").read_text())
    assert "metric" not in generated
    tables = (run / "reports/tiny-helmsman/helmsman_tables.md").read_text()
    assert "substitute data" in tables and "| Q4 |" in tables and "FedNova" in tables
    assert "Table 5" in tables and "TARGET" in tables  # the paper's Q16 rows


def test_a_rerun_does_nothing_and_a_deleted_run_reruns_alone(run):
    assert planned_jobs(run, config=CONFIG) == []
    (run / f"{HELM}/Q4/baseline=fedprox/seed=0/run.json").unlink()
    rules = sorted(rule for rule, _ in planned_jobs(run, config=CONFIG))
    assert rules == ["helm_baseline", "helm_report"]


def test_every_job_another_waits_on_goes_first(run):
    # a job whose output another job (not a report) reads carries the chain
    # priority, and no job of priority 0 started while one of those waited
    queue = replay(run_log(run))
    assert queue.jumps == [] and queue.unprioritised == []

"""The Fed-SE DAG on the tiny model: caching, resume, privacy and determinism."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
import yaml

from evoflow import warmstart
from evoflow.seeding import derive_seed
from evoflow.store.query import connect
from tests.workflow.conftest import (
    ROOT,
    TINY,
    dry_run_jobs,
    planned_jobs,
    run_log,
    snakemake,
)
from tests.workflow.queue import replay

pytestmark = pytest.mark.slow


def test_run_produces_table_figures_and_a_complete_store(tiny_run):
    table = (tiny_run / "reports" / "tiny" / "table1.md").read_text()
    for title in ("Pre-Trained", "Random (valid actions)", "Local", "Centralized",
                  "FedIT", "Fed-SE"):  # fmt: skip
        assert f"| {title} |" in table
    assert (
        tiny_run / "reports" / "tiny" / "figures" / "success_by_round.png"
    ).stat().st_size > 1000
    con = connect(tiny_run / "results")
    sources = dict(
        con.sql("SELECT source, count(*) FROM episodes GROUP BY source").fetchall()
    )
    assert (
        sources["expert"] == 4
        and sources["explore"] == 2 * 2 * 2
        and sources["eval"] > 0
    )
    longest_demo = con.sql(
        "SELECT max(n_turns), min(horizon) FROM episodes WHERE source = 'expert'"
    ).fetchall()[0]
    assert longest_demo[0] <= 2 and longest_demo[1] == 2  # tiny.yaml: max_turns 2
    rounds = con.sql(
        "SELECT DISTINCT round FROM episodes WHERE method = 'fedse' ORDER BY 1"
    ).fetchall()
    assert rounds == [(1,), (2,)]


def test_training_jobs_ran_with_their_own_seeds(tiny_run):
    # Prepare: where each job's training.json lies, and its seed worked out by hand
    results = tiny_run / "results" / "tiny"
    expected = {
        "fedse/round=1/client=maze": derive_seed(0, "sft", 1, "all-clients"),
        "fedse/round=1/client=wordle": derive_seed(0, "sft", 1, "all-clients"),
        "fedse/round=2/client=maze": derive_seed(0, "sft", 2, "maze"),
        "fedse/round=2/client=wordle": derive_seed(0, "sft", 2, "wordle"),
        "local/round=1/client=maze": derive_seed(0, "sft", 1, "maze"),
        "centralized/round=1/global": derive_seed(0, "sft", 1, "pooled"),
    }

    # Execute
    seeds = {
        job: json.loads((results / job / "adapter" / "training.json").read_text())[
            "config"
        ]["seed"]
        for job in expected
    }

    # Assert
    assert seeds == expected


def test_second_run_does_nothing(tiny_run):
    assert planned_jobs(tiny_run) == []


def test_deleting_one_client_adapter_reruns_only_what_depends_on_it(
    tiny_run, tiny_copy
):
    # Prepare
    shutil.rmtree(tiny_copy / "results/tiny/fedse/round=1/client=maze/adapter")

    # Execute
    jobs = planned_jobs(tiny_copy)

    # Assert: that client, its round's aggregate and everything after it in
    # Fed-SE, and the matched-budget control's clients from round 2 on, which
    # count their steps from Fed-SE's round-2 buffers (round 1's buffer stands)
    rules = sorted(
        {
            (rule, out.split("/")[2], out.split("/")[3])
            for rule, out in jobs
            if out.startswith("results/")
        }
    )
    assert ("train_client", "fedse", "round=1") in rules
    assert (
        "explore",
        "fedse",
        "round=1",
    ) not in rules  # exploration came before training
    assert {m for _, m, _ in rules} == {"fedse", "fedit_matched"}  # no other method
    assert ("train_client", "fedit_matched", "round=1") not in rules
    assert ("train_client", "fedit_matched", "round=2") in rules
    maze = [out for rule, out in jobs if rule == "train_client" and "round=1" in out]
    assert maze == ["results/tiny/fedse/round=1/client=maze/adapter"]  # that one only
    ledger = tiny_copy / "logs/tiny/bench" / warmstart.LEDGER
    notes = ledger.read_text()
    snakemake(tiny_copy, env={**os.environ, warmstart.SWITCH_VAR: "0"})
    assert planned_jobs(tiny_copy) == []
    assert ledger.read_text() == notes  # the rerun's jobs started cold
    # Same seed, same results: the rerun chain (training, aggregation, exploration
    # and evaluation of Fed-SE, in another directory, each job in a process of its
    # own) rebuilds what the warm-started run made.
    assert_same_results(tiny_run, tiny_copy)


def test_no_evaluation_goes_before_a_ready_step_of_a_chain(tiny_run):
    # what a next round waits on (exploration, client training, aggregation)
    # starts before any evaluation whenever both are ready
    queue = replay(run_log(tiny_run))
    assert queue.jumps == [] and queue.unprioritised == []
    # the order was tested: exploration and training went first while an
    # evaluation was ready
    assert {"explore", "train_client"} <= set().union(*queue.contested)
    # and Fed-SE's chain (it explores) went first: a Fed-SE client's training
    # started while a ready client training of a method that only trains waited
    assert any("train_client" in ahead and "train_client" in behind
               for ahead, behind in queue.overtook)  # fmt: skip


def test_every_job_of_a_local_run_started_warm(tiny_run):
    bench = tiny_run / "logs/tiny/bench"
    benchmarked = Counter(
        path.relative_to(bench).parts[0] for path in bench.glob("*/**/*.tsv")
    )
    lines = (bench / warmstart.LEDGER).read_text().splitlines()
    notes = Counter(json.loads(line)["rule"] for line in lines)
    # one note a job (each ran in the warm server), also for the unbenchmarked report
    assert {rule: notes[rule] for rule in benchmarked} == benchmarked
    assert notes["report"] == 1
    train = [json.loads(line) for line in lines if '"train_client"' in line]
    assert all(n["max_rss"] > 100 and n["cpu_time"] > 0 for n in train)


def assert_same_results(first, second) -> None:
    # the adapters byte for byte (the tiny model's greedy replies barely depend on them)
    adapters = sorted(first.glob("results/tiny/*/round=*/**/adapter_model.safetensors"))
    assert adapters
    for path in adapters:
        twin = second / path.relative_to(first)
        assert twin.read_bytes() == path.read_bytes(), path.relative_to(first)
    for name in ("table1.md", "table1.csv", "table1.tex"):
        assert (second / "reports/tiny" / name).read_text() == (
            first / "reports/tiny" / name
        ).read_text()
    query = (
        "SELECT episode_id, messages, reward FROM episodes "
        "WHERE source != 'expert' ORDER BY episode_id"
    )
    rows = [connect(run / "results").sql(query).fetchall() for run in (first, second)]
    assert rows[0] == rows[1]


def test_changing_one_method_reruns_only_that_method(tiny_copy, tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["methods"]["fedit"] = {"train": {"learning_rate": 5.0e-3}}
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    jobs = planned_jobs(tiny_copy, config=changed)
    methods = {
        out.split("/")[2]
        for _, out in jobs
        if out.startswith("results/tiny/") and "/round=" in out
    }
    assert methods == {"fedit"}


def test_a_killed_run_resumes_without_reading_partial_artifacts(tiny_copy):
    # Prepare: make the last round of Fed-SE run again, and kill it mid-training
    for env in ("maze", "wordle"):
        shutil.rmtree(tiny_copy / f"results/tiny/fedse/round=2/client={env}/adapter")
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tiny_copy),
        "--configfile", str(TINY), "--cores", "1",
    ]  # fmt: skip
    run = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not any((tiny_copy / "logs/tiny/fedse/round=2/train").glob("*.loss.jsonl")):
        assert time.monotonic() < deadline, "training never started"
        assert run.poll() is None, "snakemake ended before it could be killed"
        time.sleep(0.2)

    # Execute: kill -9 the whole run (snakemake and its job), then resume
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    snakemake(tiny_copy, "--unlock")
    resumed = snakemake(tiny_copy, "--rerun-incomplete")

    # Assert
    assert "Finished" in resumed.stderr + resumed.stdout
    assert planned_jobs(tiny_copy) == []
    leftovers = [p for p in (tiny_copy / "results").rglob("*") if ".tmp-" in p.name]
    con = connect(tiny_copy / "results")  # would fail on any unreadable shard
    assert con.sql("SELECT count(*) FROM episodes").fetchall()[0][0] > 0
    assert all(p.name.startswith(".") for p in leftovers)


def test_aggregation_never_sees_trajectories(tmp_path):
    """Privacy as a DAG property: server-side jobs take adapters only."""
    workdir = tmp_path / "dag"
    workdir.mkdir()
    jobs = dry_run_jobs(snakemake(workdir, "-n", "--forceall").stdout)
    server = [job for job in jobs if job["rule"] == "aggregate"]
    assert len(server) == 6  # fedit, fedit_matched and fedse, two rounds each
    for job in server:
        assert job["input"], job
        assert all(
            f.endswith("/adapter") or f.endswith("/global/comm.json")
            for f in job["input"]
        ), job
        assert not any(
            f.endswith((".parquet", "buffer.json", "manifest.json"))
            for f in job["input"]
        )
    assert any(
        f.endswith(".parquet") for job in jobs for f in job["input"]
    )  # the parser sees shards

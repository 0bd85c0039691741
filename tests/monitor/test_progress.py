"""`evoflow progress`: Snakemake's output read as events, and the time-left
estimate worked by hand."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from evoflow.monitor.events import Event, EventReader
from evoflow.monitor.progress import Progress, duration
from tests.workflow.conftest import dry_run_jobs, snakemake

# Snakemake 9's default output for two jobs, one with a message, one without.
TRANSCRIPT = """\
Job stats:
job             count
------------  -------
all                 1
train_client        4
evaluate            2
total               7

Select jobs to execute...
Execute 2 jobs...

[Tue Dec  1 22:00:00 2026]
Job 3: train fedse round 1 on babyai
Reason: Missing output files

[Tue Dec  1 22:00:00 2026]
rule evaluate:
    input: a, b
    output: c
    jobid: 5
    reason: Missing output files
    resources: tmpdir=/tmp

[Tue Dec  1 22:00:10 2026]
Finished jobid: 3 (Rule: train_client)
1 of 7 steps (14%) done
[Tue Dec  1 22:00:12 2026]
Error in rule evaluate:
    message: None
    jobid: 5
    output: c
"""


def read(text: str) -> list[Event]:
    reader = EventReader()
    return [event for line in text.splitlines() for event in reader.feed(line)]


def test_a_transcript_reads_as_plan_starts_finish_steps_and_error():
    events = read(TRANSCRIPT)
    assert [e.kind for e in events] == [
        "plan",
        "start",
        "start",
        "finish",
        "steps",
        "error",
    ]
    plan, message, block, finish, steps, error = events
    assert dict(plan.counts) == {"all": 1, "train_client": 4, "evaluate": 2}
    assert (message.job, message.text) == (3, "train fedse round 1 on babyai")
    assert (block.job, block.rule) == (5, "evaluate")
    assert (finish.job, finish.rule) == (3, "train_client")
    assert (steps.done, steps.total) == (1, 7)
    assert (error.job, error.rule) == (5, "evaluate")


def test_time_left_is_the_rules_mean_job_time_less_time_spent_over_the_cores():
    progress = Progress(cores=2, prior={"evaluate": 30.0}, started=0.0)
    progress.apply(Event("plan", counts=(("train_client", 4), ("evaluate", 2))), 0.0)
    progress.apply(Event("start", job=1, text="train 1", rule="train_client"), 0.0)
    progress.apply(Event("finish", job=1, rule="train_client"), 10.0)
    progress.apply(Event("start", job=2, text="train 2", rule="train_client"), 10.0)
    # by hand: 3 train jobs x 10 s (this run) + 2 evaluations x 30 s (the prior
    # run), less the 5 s job 2 has run, over 2 cores
    left, untimed = progress.left(15.0)
    assert left == pytest.approx((3 * 10 + 2 * 30 - 5) / 2)
    assert untimed == Counter()
    assert "about 42s left" in progress.line(now=15.0)
    assert duration(3725) == "1h02m" and duration(65) == "1m05s"


def test_a_rule_never_timed_is_counted_apart():
    progress = Progress(cores=1, prior={"train_client": 10.0}, started=0.0)
    progress.apply(Event("plan", counts=(("train_client", 1), ("report", 2))), 0.0)
    left, untimed = progress.left(0.0)
    assert left == 10.0 and untimed == Counter({"report": 2})
    # 10 s timed is under a minute: too little to call a floor
    assert "time left unknown (2 jobs not yet timed: 2 report)" in progress.line(
        now=0.0
    )


def test_a_timed_floor_names_the_rules_still_untimed():
    progress = Progress(cores=2, prior={"explore": 300.0}, started=0.0)
    counts = (("explore", 2), ("train_client", 10), ("evaluate", 3), ("report", 1),
              ("table", 1))  # fmt: skip
    progress.apply(Event("plan", counts=counts), 0.0)
    # by hand: 2 explorations x 300 s over 2 cores = 5 min, the rest untimed,
    # the three rules with most jobs left named first
    line = progress.line(now=0.0)
    assert (
        "at least 5m00s left (15 jobs not yet timed: 10 train_client, 3 evaluate, "
        "1 report, ...)"
    ) in line


def test_a_real_dry_run_plans_as_many_jobs_as_its_blocks_show(monkeypatch):
    """The one-line messages of a dry run (no EVOFLOW_JOB_BLOCKS) read as the
    same jobs as the per-job blocks of the run with it."""
    with tempfile.TemporaryDirectory() as workdir:
        blocks = dry_run_jobs(snakemake(Path(workdir), "-n", "--forceall").stdout)
        env = {k: v for k, v in os.environ.items() if k != "EVOFLOW_JOB_BLOCKS"}
        quiet = snakemake(Path(workdir), "-n", "--forceall", env=env).stdout
    events = read(quiet)
    plan = next(e for e in events if e.kind == "plan")
    starts = [e for e in events if e.kind == "start"]
    planned = Counter(dict(plan.counts))
    del planned["all"]  # a dry run prints no job for the target rule
    assert planned == Counter(job["rule"] for job in blocks)
    assert len(starts) == len(blocks) + 1  # and the target's own line
    messages = [e.text for e in starts if e.rule is None]
    assert messages, "no rule printed its one-line message"

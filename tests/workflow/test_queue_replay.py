"""The scheduling replay the DAG tests rely on (conftest.queue_jumps), on logs
written by hand: it must see a jump when there is one, and refuse a log it
cannot replay rather than pass on it."""

import pytest

from tests.workflow.conftest import queue_jumps

CHAIN, LEAF = {"explore", "train_pooled"}, {"evaluate"}


def block(job: int, rule: str, inputs: str = "", output: str = "") -> str:
    lines = ["", "[Mon Dec  7 11:42:03 2026]", f"rule {rule}:"]
    lines += [f"    input: {inputs}"] if inputs else []
    lines += [
        f"    output: {output}",
        f"    jobid: {job}",
        "    resources: tmpdir=/tmp",
    ]
    return "\n".join(lines)


def finish(job: int, rule: str) -> str:
    return f"\n[Mon Dec  7 11:43:03 2026]\nFinished jobid: {job} (Rule: {rule})"


SELECT = "Select jobs to execute...\nExecute 1 jobs..."
EXPLORE = block(1, "explore", output="a.parquet")
EVALUATE = block(2, "evaluate", output="eval.json")
TRAIN = block(3, "train_pooled", inputs="a.parquet", output="adapter")


def test_a_leaf_started_before_a_ready_chain_job_is_a_jump():
    log = "\n".join([SELECT, EVALUATE, finish(2, "evaluate"), SELECT, EXPLORE,
                     finish(1, "explore"), SELECT, TRAIN, finish(3, "train_pooled")])  # fmt: skip
    queue = queue_jumps(log, CHAIN, LEAF)
    assert queue.jumps == ["['evaluate'] started while ['explore'] waited"]
    assert queue.contested == 1


def test_chain_first_is_no_jump_and_a_job_waiting_on_inputs_is_not_ready():
    log = "\n".join([SELECT, EXPLORE, finish(1, "explore"), SELECT, TRAIN,
                     finish(3, "train_pooled"), SELECT, EVALUATE, finish(2, "evaluate")])  # fmt: skip
    queue = queue_jumps(log, CHAIN, LEAF)
    assert queue.jumps == []
    assert queue.contested == 2  # explore, then train, each with evaluate waiting
    # evaluate before train, while train still waits on explore's output
    log = "\n".join([SELECT, EXPLORE, EVALUATE, finish(1, "explore"),
                     finish(2, "evaluate"), SELECT, TRAIN, finish(3, "train_pooled")])  # fmt: skip
    assert queue_jumps(log, CHAIN, LEAF).jumps == []


def test_a_log_it_cannot_replay_is_refused():
    with pytest.raises(ValueError, match="0 job blocks"):  # message-only log
        queue_jumps(f"{SELECT}\nJob 1: explore babyai\nFinished jobid: 1", CHAIN, LEAF)
    with pytest.raises(ValueError, match="1 started and never finished"):
        queue_jumps("\n".join([SELECT, EXPLORE]), CHAIN, LEAF)

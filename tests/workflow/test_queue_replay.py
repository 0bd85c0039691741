"""The scheduling replay the DAG tests rely on (tests/workflow/queue.py), on
logs written by hand in Snakemake's format: it must see a jump when there is
one, and refuse a log it cannot replay rather than pass on it."""

import pytest

from tests.workflow.queue import replay


def block(job: int, rule: str, inputs: str = "", output: str = "", priority=1) -> str:
    lines = ["", "[Mon Dec  7 11:42:03 2026]", f"rule {rule}:"]
    lines += [f"    input: {inputs}"] if inputs else []
    lines += [f"    output: {output}", f"    jobid: {job}"]
    lines += [f"    priority: {priority}"] if priority else []
    return "\n".join(lines + ["    resources: tmpdir=/tmp"])


def finish(job: int, rule: str) -> str:
    return f"\n[Mon Dec  7 11:43:03 2026]\nFinished jobid: {job} (Rule: {rule})"


def select(n: int = 1) -> str:
    return f"Select jobs to execute...\nExecute {n} jobs..."


EXPLORE = block(1, "explore", output="a.parquet")
EVALUATE = block(2, "evaluate", output="eval.json", priority=0)
TRAIN = block(3, "train_pooled", inputs="a.parquet", output="adapter")


def test_a_leaf_started_before_a_ready_chain_job_is_a_jump():
    log = "\n".join([select(), EVALUATE, finish(2, "evaluate"), select(), EXPLORE,
                     finish(1, "explore"), select(), TRAIN, finish(3, "train_pooled")])  # fmt: skip
    queue = replay(log)
    assert queue.jumps == ["['evaluate'] started while ['explore'] waited"]
    assert queue.contested == [] and queue.unprioritised == []


def test_chain_first_is_no_jump_and_a_job_waiting_on_inputs_is_not_ready():
    log = "\n".join([select(), EXPLORE, finish(1, "explore"), select(), TRAIN,
                     finish(3, "train_pooled"), select(), EVALUATE, finish(2, "evaluate"),
                     select(), "Job 0: st: every artifact is in results/st/", finish(0, "all")])  # fmt: skip
    queue = replay(log)  # the target's message stands in for its block
    assert queue.jumps == []
    assert queue.contested == [{"explore"}, {"train_pooled"}]  # evaluate waited
    # evaluate beside explore, while train still waits on explore's output
    log = "\n".join([select(2), EXPLORE, EVALUATE, finish(1, "explore"),
                     finish(2, "evaluate"), select(), TRAIN, finish(3, "train_pooled")])  # fmt: skip
    assert replay(log).jumps == []


def test_a_selection_after_an_empty_one_sees_the_jobs_finished_since():
    # Snakemake prints no "Select" after a selection that started nothing:
    # explore finished before evaluate's selection, so train was ready then
    log = "\n".join([select(), EXPLORE, "Select jobs to execute...", finish(1, "explore"),
                     "Execute 1 jobs...", EVALUATE, finish(2, "evaluate"), select(), TRAIN,
                     finish(3, "train_pooled")])  # fmt: skip
    assert replay(log).jumps == ["['evaluate'] started while ['train_pooled'] waited"]


def test_a_job_another_waits_on_without_the_priority_is_named():
    explore = block(1, "explore", output="a.parquet", priority=0)
    log = "\n".join([select(), explore, finish(1, "explore"), select(), TRAIN,
                     finish(3, "train_pooled")])  # fmt: skip
    assert replay(log).unprioritised == ["explore feeds ['train_pooled']"]


def test_a_log_it_cannot_replay_is_refused():
    with pytest.raises(ValueError, match="0 job blocks"):  # messages only
        replay(f"{select()}\nJob 1: explore babyai\nFinished jobid: 1 (Rule: explore)")
    with pytest.raises(ValueError, match="1 started and never finished"):
        replay("\n".join([select(), EXPLORE]))
    with pytest.raises(ValueError, match="1 blocks missing"):
        replay("\n".join([select(2), EXPLORE, finish(1, "explore")]))


def test_a_chain_job_started_before_a_ready_higher_chain_job_is_a_jump():
    # FedIT's training (priority 1) before Fed-SE's exploration (priority 2)
    explore = block(1, "explore", output="a.parquet", priority=2)
    fedit = block(4, "train_client", output="fedit_adapter", priority=1)
    log = "\n".join([select(), fedit, finish(4, "train_client"), select(), explore,
                     finish(1, "explore")])  # fmt: skip
    assert replay(log).jumps == ["['train_client'] started while ['explore'] waited"]
    log = "\n".join([select(), explore, finish(1, "explore"), select(), fedit,
                     finish(4, "train_client")])  # fmt: skip
    queue = replay(log)
    assert queue.jumps == [] and queue.overtook == [({"explore"}, {"train_client"})]

"""The planning phase reproduces the four paths of the paper's Table 12
(the Q1 query as written, paraphrased, incomplete and out of schema), and
plan feedback loops back to the Planner."""

from __future__ import annotations

import json

import pytest

from evoflow.helmsman.approval import (
    ApprovalPending,
    AutoApprover,
    FileApprover,
    make_approver,
)
from evoflow.helmsman.llm import AgentLLM
from evoflow.helmsman.plan import check_query, plan_task

from .scripted import ScriptedPolicy

PLAN = ("## Summary\nFedAvg over 15 phones.\n## Challenges\nlong tail\n## Tasks\n1. split\n"
        "## Technical Setup\nMobileNet, 100 rounds, top-1 accuracy")  # fmt: skip
ORIGINAL = ("I need to deploy image recognition across 15 smartphones. Each client holds "
            "CIFAR-10-LT data with a long-tail class imbalance. Build a federated learning "
            "framework training a MobileNet model, evaluated by top-1 test accuracy.")  # fmt: skip
PARAPHRASED = ("Fit a MobileNet across 15 mobile devices whose CIFAR-10-LT images are "
               "skewed towards a few classes; report its accuracy on held-out images.")  # fmt: skip
INCOMPLETE = (
    "Federated training over 15 phones whose data are skewed, with a MobileNet."
)
OUT_OF_SCHEMA = "Hello world!!!@#$#$%"


class Person:
    """A scripted human: answers questions in order and approves plans."""

    interactive = True

    def __init__(self, answers=(), reviews=((True, ""),)) -> None:
        self.answers, self.reviews = list(answers), list(reviews)
        self.asked: list[str] = []

    def answer(self, question):
        self.asked.append(question)
        return self.answers.pop(0) if self.answers else None

    def review(self, plan):
        return self.reviews.pop(0)


def _llm(tmp_path, reflections=("COMPLETE",)):
    replies, drafts = iter(reflections), iter(range(100))

    def script(agent, prompt):
        # each draft differs, as a revised plan would (same prompt, same reply: cached)
        draft = next(drafts) if agent == "planner" else None
        return (
            (PLAN if not draft else f"{PLAN}\n(revision {draft})")
            if agent == "planner"
            else next(replies)
        )

    policy = ScriptedPolicy(script)
    return AgentLLM(policy, tmp_path / "calls.jsonl"), policy


@pytest.mark.parametrize(
    ("query", "answers", "path"),
    [
        (ORIGINAL, (), ["plan", "reflect", "human_review"]),
        (PARAPHRASED, (), ["plan", "reflect", "human_review"]),
        (INCOMPLETE, ("Data: CIFAR-10-LT; metric: top-1 accuracy.",),
         ["missing_info", "user_input", "plan", "reflect", "human_review"]),
        (OUT_OF_SCHEMA, (ORIGINAL,),
         ["schema_anomaly", "user_correction", "plan", "reflect", "human_review"]),
    ],
)  # fmt: skip
def test_the_four_paths_of_table_12(query, answers, path, tmp_path):
    llm, _ = _llm(tmp_path)
    result = plan_task(query, llm, Person(answers))
    assert result.status == "approved" and result.path == path
    assert result.plan == PLAN


def test_the_incomplete_query_is_missing_the_dataset_name_and_the_metric():
    assert check_query(INCOMPLETE) == ("incomplete", ["metric"])
    assert check_query(ORIGINAL) == ("ok", [])
    assert check_query(OUT_OF_SCHEMA) == ("out_of_schema", [])


def test_auto_approval_has_no_human_node(tmp_path):
    llm, _ = _llm(tmp_path)
    assert plan_task(ORIGINAL, llm, AutoApprover()).path == ["plan", "reflect"]


def test_an_out_of_schema_query_without_a_person_is_rejected_clearly(tmp_path):
    llm, policy = _llm(tmp_path)
    result = plan_task(OUT_OF_SCHEMA, llm, AutoApprover())
    assert result.status == "rejected" and "outside the schema" in result.reason
    assert policy.calls == []


def test_reflection_and_human_feedback_send_the_plan_back(tmp_path):
    llm, policy = _llm(
        tmp_path,
        reflections=("INCOMPLETE: no rounds\n- rounds", "COMPLETE", "COMPLETE"),
    )
    person = Person(reviews=[(False, "use FedProx"), (True, "")])
    result = plan_task(ORIGINAL, llm, person, max_rounds=3)
    assert result.path == ["plan", "reflect", "plan", "reflect", "human_review",
                           "plan", "reflect", "human_review"]  # fmt: skip
    planner_prompts = [p for a, p in policy.calls if a == "planner"]
    assert "no rounds" in planner_prompts[1] and "use FedProx" in planner_prompts[2]


def test_the_plan_rounds_are_bounded(tmp_path):
    llm, _ = _llm(tmp_path, reflections=["INCOMPLETE: vague"] * 5)
    result = plan_task(ORIGINAL, llm, AutoApprover(), max_rounds=2)
    assert result.status == "rejected" and "2 rounds" in result.reason


def test_a_batch_run_stops_for_each_decision_and_replays_them_on_rerun(tmp_path):
    decision = tmp_path / "approval.json"

    def attempt():
        llm, policy = _llm(tmp_path, reflections=["COMPLETE"] * 4)
        return plan_task(ORIGINAL, llm, make_approver("file", decision)), policy

    with pytest.raises(ApprovalPending, match="approval.json") as stop:
        attempt()
    assert "approval.draft-1.md" in str(stop.value)
    assert (
        tmp_path / "approval.draft-1.md"
    ).read_text() == PLAN  # what the person reads
    decision.write_text(json.dumps({"feedback": "use FedProx"}))
    with pytest.raises(ApprovalPending, match="draft-2"):  # the feedback is used once
        attempt()
    decision.write_text(json.dumps({"approve": True}))
    result, policy = attempt()
    assert result.status == "approved" and result.path.count("human_review") == 2
    assert policy.calls == []  # the rerun replayed every call from the call log
    from evoflow.helmsman.llm import read_calls

    revised = [
        c for c in read_calls(tmp_path / "calls.jsonl") if c["agent"] == "planner"
    ]
    assert len(revised) == 2  # the first draft, and the one after the feedback
    broken = tmp_path / "other" / "approval.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    with pytest.raises(ApprovalPending, match="not valid JSON"):
        FileApprover(broken).review(PLAN)


def test_every_benchmark_query_fits_the_schema():
    from evoflow.helmsman.bench import load_tasks

    assert {t.id: check_query(t.query) for t in load_tasks()} == {
        f"Q{i}": ("ok", []) for i in range(1, 17)
    }

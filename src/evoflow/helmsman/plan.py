"""Phase 1: from a research query to an approved plan.

The query is checked against the benchmark's query template first (who the
clients are, their data, the model, the metric). A query that is no
federated-learning request at all is *out of schema*: a person must correct
it. One that lacks parts is *incomplete*: a person is asked for them (the
agents go on without them when nobody answers). Then the Planner drafts, the
Reflector judges (INCOMPLETE sends its feedback back to the Planner) and a
person approves or sends feedback; ``auto`` approval has no human step. Every
step is a node name in ``PlanResult.path``, so the four paths of the paper's
Table 12 can be read off a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evoflow.helmsman import agents
from evoflow.helmsman.agents import ReplyError
from evoflow.helmsman.llm import AgentLLM

FL_WORDS = re.compile(r"federat|client|device|phone|hospital|silo|wearable|node", re.I)
COUNT = (
    r"(\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"
)
NODES = r"(client|device|phone|smartphone|hospital|camera|wearable|node|site|silo)s?"
PARTS = {
    "clients": re.compile(rf"\b{COUNT}\b[\w\s-]{{0,24}}?\b{NODES}\b", re.I),
    "data": re.compile(
        r"data|images?|photos?|samples|signals|recordings|speech|audio|"
        r"CIFAR|MNIST|ImageNet|Office-Home|ISIC|Caltech|HAR\b",
        re.I,
    ),  # fmt: skip
    "model": re.compile(
        r"model|net\b|resnet|mobilenet|shufflenet|cnn|lstm|mlp|transformer", re.I
    ),
    "metric": re.compile(r"accuracy|metric|evaluat|f1|forgetting|loss", re.I),
}


@dataclass
class PlanResult:
    """``status`` is ``approved`` or ``rejected`` (then ``reason`` says why)."""

    status: str
    query: str
    plan: str = ""
    reason: str = ""
    path: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)


def check_query(query: str) -> tuple[str, list[str]]:
    """``("ok", [])``, ``("incomplete", missing parts)`` or ``("out_of_schema", [])``."""
    words = re.findall(r"[A-Za-z]{2,}", query)
    if len(words) < 4 or not FL_WORDS.search(query):
        return "out_of_schema", []
    missing = [part for part, pattern in PARTS.items() if not pattern.search(query)]
    return ("incomplete", missing) if missing else ("ok", [])


def plan_task(query: str, llm: AgentLLM, approver, max_rounds: int = 3) -> PlanResult:
    """Run the planning phase; at most ``max_rounds`` plans are drafted."""
    result = PlanResult("rejected", query)
    if not _settle_query(result, approver):
        return result
    feedback = None
    for _ in range(max_rounds):
        result.path.append("plan")
        try:
            plan = agents.parse_plan(
                llm.ask("planner", agents.planner(result.query, feedback))
            )
        except ReplyError as error:
            feedback = f"Your reply could not be used: {error}."
            result.feedback.append(feedback)
            continue
        result.path.append("reflect")
        try:
            complete, notes = agents.parse_reflection(
                llm.ask("reflector", agents.reflector(result.query, plan)))  # fmt: skip
        except ReplyError as error:
            complete, notes = False, f"The reflection could not be read: {error}."
        if not complete:
            feedback = notes
            result.feedback.append(notes)
            continue
        if approver.interactive:
            result.path.append("human_review")
            approved, feedback = approver.review(plan)
            if not approved:
                result.feedback.append(feedback)
                continue
        result.status, result.plan = "approved", plan
        return result
    result.reason = f"no plan was approved in {max_rounds} rounds"
    return result


def _settle_query(result: PlanResult, approver) -> bool:
    """Check the query; ask a person to correct or complete it if needed."""
    status, missing = check_query(result.query)
    if status == "out_of_schema":
        result.path.append("schema_anomaly")
        correction = approver.answer(
            "The query does not read as a federated-learning request; please restate it."
        )
        if not correction:
            result.reason = (
                "the query is outside the schema (no federated-learning request found)"
            )
            return False
        result.path.append("user_correction")
        result.query = correction
        status, missing = check_query(correction)
        if status == "out_of_schema":
            result.reason = "the corrected query is still outside the schema"
            return False
    if status == "incomplete":
        result.path.append("missing_info")
        answer = approver.answer(f"The query does not say: {', '.join(missing)}.")
        if answer:
            result.path.append("user_input")
            result.query = f"{result.query}\n{answer}"
    return True

"""The four SAGE roles of one model: what each is asked, and how its reply is read.

A role is a prompt. Every prompt names the role, says what to do, and lists
the tags the reply must use — the tags the format reward ``r_f`` checks
(``evoflow.sage.rewards``). A Challenger writing a code question gives the
question, assert-style tests, a reference solution in ``<answer>`` and its
type; for maths the question, the exact answer and the type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evoflow.sage.problems import KINDS, Problem
from evoflow.sage.rewards import ROLE_TAGS
from evoflow.verify.code import extract_code

ROLES = ("challenger", "planner", "solver", "critic")
TEMPERATURES = {"challenger": 0.6, "planner": 0.6, "solver": 0.6, "critic": 0.1}

# shared: one LoRA plays and learns every role (the paper: one LLM, one set of
# weights); per_role: each role its own LoRA in the same model, the Solver's
# named "default" (the one evaluated).
ADAPTERS = ("shared", "per_role")

Chat = list[dict[str, str]]


def adapter_name(role: str, adapters: str) -> str:
    """The adapter ``role`` plays and trains with under ``adapters``."""
    if adapters not in ADAPTERS:
        raise ValueError(f"sage.adapters must be one of {ADAPTERS}, got {adapters!r}")
    return role if adapters == "per_role" and role != "solver" else "default"


def tags(role: str, kind: str) -> tuple[str, ...]:
    """The tags a ``role`` reply must hold for a question of ``kind``."""
    if role == "challenger" and kind == "code":
        return (*ROLE_TAGS[role][:2], "tests", ROLE_TAGS[role][2])
    return ROLE_TAGS[role]


def tag(text: str, name: str) -> str | None:
    """The body of the first ``<name>…</name>`` in ``text``, stripped, or None."""
    found = re.search(rf"<{name}>(.*?)</{name}>", text, re.DOTALL)
    return found.group(1).strip() if found else None


def _user(text: str) -> Chat:
    return [{"role": "user", "content": text}]


def tagged(problem: Problem, fenced: bool = False, typed: bool = False) -> str:
    """``problem`` in the Challenger's tags, as examples are shown to it
    (``fenced``: the solution in a Markdown code fence; ``typed``: with
    ``<type>``, as a Challenger reply ends)."""
    if problem.kind == "math":
        body = f"<question>{problem.question}</question>\n<answer>{problem.answer}</answer>"
    else:
        tests = "\n".join(problem.tests)
        code = fence(problem.solution) if fenced else problem.solution
        body = (f"<question>{problem.question}</question>\n<tests>\n{tests}\n</tests>\n"
                f"<answer>\n{code}\n</answer>")  # fmt: skip
    return body + (f"\n<type>{problem.kind}</type>" if typed else "")


def fence(code: str) -> str:
    return f"```python\n{code}```"


def challenger_chat(references: list[Problem]) -> Chat:
    """Ask for one new question of the references' kind, with its verifier."""
    kind = references[0].kind
    shown = "\n\n".join(tagged(p) for p in references)
    if kind == "math":
        verifier = "<answer> with only the exact final answer"
    else:
        verifier = ("<tests> with one Python assert per line, and <answer> with "
                    "a Python function that passes every test")  # fmt: skip
    return _user(
        "Role: Challenger. Write a new problem that is a little harder than these "
        "examples, self-contained and solvable, with a single checkable result.\n\n"
        f"Examples:\n{shown}\n\nReply with <question> holding the problem, "
        f"{verifier}, and <type>{kind}</type>."
    )


def critic_question_chat(question: str) -> Chat:
    return _user(
        "Role: Critic. Rate this problem for clarity, completeness and whether it "
        "has exactly one correct result, from 1 (unusable) to 10 (excellent).\n\n"
        f"Problem: {question}\n\nReply with the integer in <score></score>."
    )


def planner_chat(question: str) -> Chat:
    return _user(
        "Role: Planner. Break this problem into short numbered steps that lead "
        "to its result. Do not carry the steps out.\n\n"
        f"Problem: {question}\n\nReply with the steps in <plan></plan>."
    )


def critic_plan_chat(question: str, plan: str) -> Chat:
    return _user(
        "Role: Critic. Rate this plan for the problem: are its steps complete, "
        "in order and sound? From 1 (useless) to 10 (excellent).\n\n"
        f"Problem: {question}\nPlan: {plan}\n\nReply with the integer in <score></score>."
    )


def solver_chat(problem: Problem, plan: str | None) -> Chat:
    """The Solver's prompt; ``plan`` only when its score passed the gate."""
    guide = f"\nPlan: {plan}\n" if plan else "\n"
    if problem.kind == "math":
        form = ("Write the arithmetic on one line, then only the final result "
                "in <answer></answer>.")  # fmt: skip
    else:
        form = "Reply with the complete Python function in <answer></answer>."
    return _user(
        f"Role: Solver. Solve this problem.\n\nProblem: {problem.question}\n{guide}\n{form}"
    )


@dataclass(frozen=True)
class Proposal:
    """What a Challenger reply proposes (fields empty where a tag is missing)."""

    question: str
    answer: str
    tests: tuple[str, ...]
    kind: str


def proposal(text: str, kind: str) -> Proposal | None:
    """The Challenger's question and verifier, or None without a question."""
    question = tag(text, "question")
    if not question:
        return None
    said = (tag(text, "type") or kind).lower()
    kind = said if said in KINDS else kind
    answer = tag(text, "answer") or ""
    tests: tuple[str, ...] = ()
    if kind == "code":
        answer = extract_code(answer).strip() if answer else ""
        body = extract_code(tag(text, "tests") or "")
        tests = tuple(line.strip() for line in body.splitlines() if line.strip())
    return Proposal(question, answer, tests, kind)


def solver_answer(text: str, kind: str) -> str:
    """The Solver's answer: the ``<answer>`` body (code: its code block if any)."""
    body = tag(text, "answer")
    if kind == "code":
        return extract_code(body if body is not None else text)
    return body or ""

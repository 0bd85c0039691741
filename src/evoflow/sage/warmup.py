"""Warm-up demonstrations: for each seed problem, one well-formed reply per role.

SFT on these teaches a small model the roles' tags — the format SAGE's rewards
read — before self-play starts (a 135M model that never writes a tag gets the
same reward for every reply, and nothing to learn from). They show the format
and the seed answers: the Solver writes a maths problem's arithmetic on one
line before its answer (a small model told to answer at once guesses; see
``docs/calibration-sage.md``), the Challenger "proposes" another seed problem
of the same kind, the Critic gives seed questions 8 and questions cut off
mid-sentence 2, and plans are a fixed outline per kind.
"""

from __future__ import annotations

from evoflow.sage import roles
from evoflow.sage.problems import Problem
from evoflow.seeding import py_random

PLANS = {
    "math": "1. List the quantities the problem gives. 2. Decide which operation each "
    "sentence asks for. 3. Apply them in order. 4. State the final number.",
    "code": "1. Read the function name and what it must return. 2. Handle the empty or "
    "edge input. 3. Build the result in one pass. 4. Return it.",
}
SCORES = {"question": 8, "broken": 2, "plan": 7}


def challenger_reply(p: Problem) -> str:
    return roles.tagged(p, fenced=True, typed=True)


def solver_reply(p: Problem) -> str:
    """The arithmetic on one line, then the answer (maths); the reference
    function (code)."""
    if p.kind == "math":
        working = f"{p.solution}\n" if p.solution else ""
        return f"{working}<answer>{p.answer}</answer>"
    return f"<answer>\n{roles.fence(p.solution)}\n</answer>"


def demos(problems: list[Problem], seed: int) -> list[list[dict]]:
    """SFT chats (``loss`` on the replies) teaching every role's tags."""
    rng = py_random(seed, "sage-warmup")
    chats = []
    for p in problems:
        others = [q for q in problems if q.kind == p.kind and q.id != p.id] or [p]
        reference = others[rng.randrange(len(others))]
        words = p.question.split()
        broken = " ".join(words[: max(1, len(words) // 3)])
        plan = PLANS[p.kind]
        chats += [
            _chat(roles.challenger_chat([reference]), challenger_reply(p)),
            _chat(roles.critic_question_chat(p.question), _score("question")),
            _chat(roles.critic_question_chat(broken), _score("broken")),
            _chat(roles.planner_chat(p.question), f"<plan>{plan}</plan>"),
            _chat(roles.critic_plan_chat(p.question, plan), _score("plan")),
            _chat(roles.solver_chat(p, None), solver_reply(p)),
        ]
    return chats


def _score(what: str) -> str:
    return f"<score>{SCORES[what]}</score>"


def _chat(prompt: list[dict], reply: str) -> list[dict]:
    return [{**m, "loss": False} for m in prompt] + [
        {"role": "assistant", "content": reply, "loss": True}
    ]

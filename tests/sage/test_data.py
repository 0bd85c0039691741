"""SAGE's offline data: disjoint seed and held-out sets, warm-up replies that
every role's reader accepts, and the Solver's evaluation."""

from __future__ import annotations

import pytest

from evoflow.policy.base import Generation
from evoflow.sage import roles, warmup
from evoflow.sage.data import (
    DataSettings,
    eval_problems,
    humaneval_halves,
    seed_problems,
)
from evoflow.sage.evaluate import evaluate_solver
from evoflow.sage.pool import text_key
from evoflow.sage.rewards import format_score
from evoflow.sage.step import Checker
from evoflow.verify import MathVerifier

SETTINGS = DataSettings(
    math_per_level=5, humaneval=3, eval_math_per_level=5, eval_humaneval=3
)


@pytest.fixture(scope="module")
def checker():
    with MathVerifier(seconds=10) as maths:
        yield Checker(maths)


def test_humaneval_halves_are_disjoint_and_cover_it():
    seed, held_out = humaneval_halves()
    assert len(seed) + len(held_out) == 164
    assert not {p.id for p in seed} & {p.id for p in held_out}
    assert 60 < len(seed) < 104  # a hash split, roughly even


def test_nothing_held_out_is_in_the_seed_set():
    seeds, held = seed_problems(SETTINGS, 0), eval_problems(SETTINGS, 0)
    assert len(seeds) == 3 * 5 + 6 + 3 and len(held) <= 4 * 5 + 3
    assert not {text_key(p.question) for p in seeds} & {
        text_key(p.question) for p in held
    }
    assert {p.level for p in held if p.kind == "math"} == {1, 2, 3, 4}


def test_warmup_replies_carry_every_tag_and_read_back(checker):
    problems = seed_problems(DataSettings(math_per_level=2, code=2), 0)
    chats = warmup.demos(problems, 0)
    assert len(chats) == 6 * len(problems)
    for p in problems:
        proposal = roles.proposal(warmup.challenger_reply(p), p.kind)
        assert (
            format_score(warmup.challenger_reply(p), roles.tags("challenger", p.kind))
            == 1
        )
        assert checker.valid(proposal)  # answers parse; reference passes its tests
        answer = roles.solver_answer(warmup.solver_reply(p), p.kind)
        assert checker.correct(p, answer) == 1.0
    scores = [c[-1]["content"] for c in chats if "Role: Critic" in c[0]["content"]]
    assert set(scores) == {"<score>8</score>", "<score>2</score>", "<score>7</score>"}
    assert all(c[-1]["loss"] and not c[0]["loss"] for c in chats)


class Answers:
    """Right answers to level-1 maths only."""

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        assert params.temperature == 0.0  # greedy pass@1
        return [Generation(self.reply(c[0]["content"]), 1, 1) for c in chats]

    def __init__(self, problems):
        self.right = {p.question: p.answer for p in problems if p.level == 1}

    def reply(self, prompt):
        found = [a for q, a in self.right.items() if q in prompt]
        return f"<answer>{found[0]}</answer>" if found else "<answer>-1</answer>"


def test_the_solver_is_scored_per_group(checker):
    problems = eval_problems(DataSettings(eval_math_per_level=3, eval_humaneval=2), 0)
    labels = {"experiment": "x", "method": "sage", "model": "m", "round": 0}
    metrics, episodes = evaluate_solver(
        Answers(problems), None, problems, checker, 8, labels
    )
    assert metrics["accuracy"] == {"humaneval": 0.0, "math-L1": 1.0, "math-L2": 0.0,
                                   "math-L3": 0.0, "math-L4": 0.0}  # fmt: skip
    assert metrics["overall"] == pytest.approx(3 / len(problems))
    assert sum(e.success for e in episodes) == 3


def test_a_math_problems_worked_arithmetic_gives_its_exact_answer():
    # the one-line working the Solver's warm-up shows, evaluated as Python,
    # must equal the answer exactly (25 % off 30 dollars times 3 is 67.5, not 67)
    from fractions import Fraction

    from evoflow.sage.problems import MATH_LEVELS, math_problem

    for level in MATH_LEVELS:
        for index in range(60):
            p = math_problem(0, level, index)
            left, right = p.solution.split(" = ")
            assert right == p.answer
            exact = eval(left.replace("/", "* Fraction(1) /"), {"Fraction": Fraction})
            assert Fraction(p.answer) == exact, p.solution

"""The offline seed problems: exact answers, tests that the reference passes."""

from __future__ import annotations

import pytest

from evoflow.sage.problems import (
    CODE_TASKS,
    Problem,
    code_problem,
    humaneval,
    math_problem,
    template_answer,
)
from evoflow.verify import MathVerifier, check_code


def test_math_problems_are_seeded_and_hold_their_answers():
    assert math_problem(0, 3, 7) == math_problem(0, 3, 7)
    assert math_problem(0, 3, 7).question != math_problem(1, 3, 7).question
    # another seed's problem at the same index is another problem, so another id
    # (a study pools seeds by pairing problems on their ids)
    assert (math_problem(0, 3, 7).id, math_problem(1, 3, 7).id) == (
        "math-3-s0-7",
        "math-3-s1-7",
    )
    assert (code_problem(0, 2).id, code_problem(5, 2).id) == ("code-s0-2", "code-s5-2")
    # Hand-check one of each level by re-reading its numbers
    one = math_problem(0, 1, 0)
    words = [w.strip(".?%") for w in one.question.split()]
    numbers = [int(w) for w in words if w.isdigit()]
    expected = sum(numbers) if "finds" in one.question else numbers[0] - numbers[1]
    assert one.answer == str(expected)
    pct = math_problem(0, 4, 0)
    price, off, packs = (int(w.strip(".?%")) for w in pct.question.split()
                         if w.strip(".?%").isdigit())  # fmt: skip
    assert int(pct.answer) == price * (100 - off) * packs // 100


def test_level_zero_is_one_operation_on_single_digits():
    kinds = set()
    for index in range(40):
        problem = math_problem(0, 0, index)
        numbers = [int(w.strip(".?")) for w in problem.question.split()
                   if w.strip(".?").isdigit()]  # fmt: skip
        finds = "finds" in problem.question
        kinds.add(finds)
        given, other = numbers
        assert 1 <= other <= 9 and given <= (9 if finds else 18)
        assert problem.answer == str(given + other if finds else given - other)
        assert 1 <= int(problem.answer) <= (18 if finds else 9)
    assert kinds == {True, False}  # both operations are drawn


def test_every_math_answer_is_a_valid_gold():
    with MathVerifier() as verifier:
        for level in (0, 1, 2, 3, 4):
            problem = math_problem(0, level, 1)
            assert verifier.parses(problem.answer)
            assert verifier.check(problem.answer, problem.answer).correct


@pytest.mark.parametrize("index", range(len(CODE_TASKS)))
def test_each_code_reference_passes_its_tests_in_the_sandbox(index):
    problem = code_problem(0, index)
    assert check_code(problem.solution, list(problem.tests)).pass_rate == 1.0
    assert check_code("", list(problem.tests)).pass_rate == 0.0  # no solution, no pass


def test_humaneval_is_read_from_the_installed_package():
    problems = humaneval()
    assert len(problems) == 164  # HumanEval's size
    first = problems[0]
    assert (
        first.id == "HumanEval-0" and first.extra["entry_point"] == "has_close_elements"
    )
    verdict = check_code(first.solution, list(first.tests))
    assert verdict.pass_rate == 1.0
    assert (
        check_code(first.question + "    return True\n", list(first.tests)).pass_rate
        == 0.0
    )


def test_bad_problems_are_named():
    with pytest.raises(ValueError, match="has no answer"):
        Problem("m", "math", "2+2?")
    with pytest.raises(ValueError, match="math level must be one of"):
        math_problem(0, 9, 0)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Zara has 3 hats and finds 2 more. How many hats now?", 5),
        ("Billy has 10 red apples and gives away 4. How many are left?", 6),
        ("Mo has 7 cards and gets 12 more.", 19),
        ("Mo has 2 cards and gives away 9.", -7),  # the shape's arithmetic, as asked
        ("What is 3 + 4?", None),  # not a level-0 shape
        ("Ann has 3 pens and finds 2 more, then has 5 cups and gives away 1.", None),
        ("Ann has 3 pens and finds many more.", None),
    ],
)
def test_a_level_zero_shape_is_read_back_to_its_answer(question, answer):
    assert template_answer(question) == answer


def test_every_generated_level_zero_problem_reads_back_to_its_own_answer():
    for index in range(200):
        problem = math_problem(7, 0, index)
        assert template_answer(problem.question) == int(problem.answer), problem

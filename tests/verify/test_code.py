"""Code answers: checked against their tests outside the program's sandbox,
on the host or in the judge; fenced blocks are found."""

from __future__ import annotations

import pytest

from evoflow.sage.problems import CODE_TASKS, code_problem, humaneval
from evoflow.sandbox import Limits
from evoflow.verify import UnsplittableTest, check_code, code_helpers, extract_code
from evoflow.verify.cases import split

QUICK = Limits(seconds=5.0, memory_mb=512, output_kb=64)
SQUARE = "def square(x):\n    return x * x\n"
# A wrapper that makes any honest function wrong: off by one, one item too
# many, a flipped truth value.
CORRUPT = """
_honest = {name}
def {name}(*args, **kwargs):
    out = _honest(*args, **kwargs)
    if isinstance(out, bool):
        return not out
    if isinstance(out, (int, float)):
        return out + 1
    if isinstance(out, str):
        return out + "x"
    if isinstance(out, (list, tuple)):
        return type(out)(list(out) + [None])
    return 0
"""


def test_pass_rate_counts_the_tests_that_pass_on_the_host():
    tests = [
        "assert square(2) == 4",
        "assert square(-3) == 9",
        "assert square(3) == 10",
    ]
    verdict = check_code(SQUARE, tests, QUICK)
    assert (verdict.passed, verdict.total, verdict.status) == (2, 3, "failed")
    assert verdict.pass_rate == pytest.approx(2 / 3) and not verdict.judged


def test_tests_the_host_cannot_split_go_to_the_judge():
    tests = ["for x in range(5):\n    assert square(x) == x ** 2",
             "assert square(square(2)) == 16", "assert square(3) in (9, 10)"]  # fmt: skip
    verdict = check_code(SQUARE, tests, QUICK)
    assert verdict.judged and (verdict.passed, verdict.total) == (3, 3)
    # wrong from 4 on: test 0 reaches 4, test 1 asks for square(4); test 2 holds
    wrong = check_code(
        "def square(x):\n    return x * x if x < 4 else 0\n", tests, QUICK
    )
    assert wrong.judged and wrong.passed == 1


def test_a_program_that_never_finishes_scores_zero():
    verdict = check_code("while True:\n    pass", ["assert f(1) == 2"], QUICK)
    assert (verdict.pass_rate, verdict.status) == (0.0, "timeout")


def test_a_function_that_raises_fails_only_its_own_test():
    program = "def f(x):\n    return 10 // x\n"
    verdict = check_code(program, ["assert f(0) == 0", "assert f(5) == 2"], QUICK)
    assert (verdict.status, verdict.passed) == ("failed", 1)


def test_a_test_may_expect_a_builtin_exception_in_the_judge():
    test = (
        "try:\n    f(0)\nexcept ZeroDivisionError:\n    pass\nelse:\n    assert False"
    )
    program = "def f(x):\n    return 10 // x\n"
    assert check_code(program, [test], QUICK).pass_rate == 1.0
    assert check_code("def f(x):\n    return 1\n", [test], QUICK).pass_rate == 0.0


def test_tests_that_cannot_be_split_are_refused():
    with pytest.raises(UnsplittableTest, match="uses nothing of the program"):
        check_code(SQUARE, ["assert True"], QUICK)
    with pytest.raises(UnsplittableTest, match="not data"):
        check_code("def apply(f, x):\n    return f(x)\n",
                   ["assert apply(lambda v: v + 1, 1) == 2"], QUICK)  # fmt: skip
    with pytest.raises(UnsplittableTest, match="only calls"):
        check_code("class Box:\n    size = 3\n", ["assert Box.size == 3"], QUICK)
    with pytest.raises(UnsplittableTest, match="cannot be sent as data"):
        check_code(SQUARE, [f"assert square({'x' * 2**21!r}) == 1"], QUICK)


def test_the_last_fenced_block_is_the_answer():
    reply = "First try:\n```python\nx = 1\n```\nBetter:\n```py\nx = 2\n```\nDone."
    assert extract_code(reply) == "x = 2\n"
    assert extract_code("x = 3") == "x = 3"


def test_code_without_tests_cannot_be_verified():
    with pytest.raises(ValueError, match="at least one test"):
        check_code("x = 1", [])


@pytest.mark.parametrize("index", range(len(CODE_TASKS)))
def test_seed_problems_pass_with_their_reference_and_fail_corrupted(index):
    problem = code_problem(0, index)
    name = problem.solution.split("def ", 1)[1].split("(")[0]
    assert check_code(problem.solution, list(problem.tests), QUICK).pass_rate == 1.0
    corrupted = problem.solution + CORRUPT.format(name=name)
    assert check_code(corrupted, list(problem.tests), QUICK).pass_rate == 0.0


def _humaneval_sample() -> list:
    """Every HumanEval problem the judge checks, and every tenth of the rest
    (``docs/notes`` records a run over all 164)."""
    problems = humaneval()
    judged = [p for p in problems if split(p.tests[0], p.question) is None]
    return judged + [p for p in problems[::10] if p not in judged]


@pytest.mark.parametrize("problem", _humaneval_sample(), ids=lambda p: p.id)
def test_humaneval_canonical_solutions_pass_and_corrupted_ones_fail(problem):
    helpers = code_helpers(problem.question)
    entry = problem.extra["entry_point"]
    honest = check_code(problem.solution, list(problem.tests), helpers=helpers)
    assert honest.pass_rate == 1.0, honest
    corrupted = problem.solution + CORRUPT.format(name=entry)
    assert check_code(corrupted, list(problem.tests), helpers=helpers).pass_rate == 0.0


def test_helpers_are_only_python_source():
    assert code_helpers("Write `f(x)`: the double of x.") == ""
    assert code_helpers("def f(x):\n    '''double'''\n") != ""

"""Tests split into calls and expectations by parsing alone."""

from __future__ import annotations

import pytest

from evoflow.sage.problems import humaneval
from evoflow.sandbox.calls import Call
from evoflow.verify.cases import (
    Expectation,
    UnsplittableTest,
    judge_plan,
    names_under_test,
    split,
)

PROMPT = (
    "import math\n\ndef poly(xs, x):\n    return sum(c * x**i for i, c in enumerate(xs))\n\n"
    "def find_zero(xs):\n    import math\n    '''A zero of the polynomial.'''\n"
)


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("assert f(2, 3) == 5", Expectation(Call("f", (2, 3)), "==", 5)),
        ("assert 5 == f(2, y=3)", Expectation(Call("f", (2,), {"y": 3}), "==", 5)),
        ("assert f('a') != 'b'", Expectation(Call("f", ("a",)), "!=", "b")),
        ("assert f(1) is None", Expectation(Call("f", (1,)), "is", None)),
        ("assert f([1, 2])", Expectation(Call("f", ([1, 2],)), "truthy")),
        ("assert not f(0)", Expectation(Call("f", (0,)), "falsy")),
        ("assert sorted(f(3)) == [1, 2]",
         Expectation(Call("f", (3,)), "==", [1, 2], wrap="sorted")),
        ("assert tuple(f(3)) == tuple([1, 2])",
         Expectation(Call("f", (3,)), "==", (1, 2), wrap="tuple")),
        ("assert round(f(1.5), 2) == 2.25",
         Expectation(Call("f", (1.5,)), "==", 2.25, wrap="round", digits=2)),
        ("assert abs(f(1.33) - 0.33) < 1e-06",
         Expectation(Call("f", (1.33,)), "close", 0.33, tolerance=1e-06, strict=True)),
        ("assert math.fabs(0.5 - f(1)) <= 0.1",
         Expectation(Call("f", (1,)), "close", 0.5, tolerance=0.1)),
        ("assert math.isclose(f(2), 3.14, rel_tol=0.001)",
         Expectation(Call("f", (2,)), "close", 3.14, relative=0.001)),
    ],
)  # fmt: skip
def test_each_form_splits_into_its_call_and_expectation(test, expected):
    assert split(test) == [expected]


@pytest.mark.parametrize(
    "test",
    [
        "assert f(3 * 19) == [3, 19]",  # an input the test computes
        "x = 2\nassert f(x) == 4",  # a statement other than an assert
        "assert f(f(1)) == 1",  # an output fed back in
        "assert f(1) == g(1)",  # two outputs compared
        "assert f(1) in (1, 2)",  # a comparison the host has no form for
        "assert f(1) is 5",  # is with something other than None / True / False
        "assert f(*[1]) == 1",
        "for x in range(3):\n    assert f(x) == x",
    ],
)
def test_what_the_host_cannot_split_goes_to_the_judge(test):
    assert split(test) is None
    assert judge_plan([test])["tests"][0]["code"] == test


def test_humaneval_check_is_unwrapped_with_candidate_standing_for_the_function():
    test = (
        "METADATA = {'author': 'x'}\n\ndef check(candidate):\n    'docs'\n    print\n"
        "    assert candidate(1) == 2\n    assert True, 'always'\n\ncheck(inc)\n"
    )
    assert split(test) == [Expectation(Call("inc", (1,)), "==", 2)]


def test_names_under_test_leave_out_builtins_modules_helpers_and_own_names():
    test = "import random\nx = random.random()\nassert find_zero([x, 1]) == poly(x) + math.pi"
    names, modules = names_under_test(test, PROMPT)
    assert names == [
        "find_zero"
    ]  # poly has a body in the prompt; find_zero is its stub
    assert modules == ["math"]
    assert names_under_test("assert f(1) == sorted([g(2)])")[0] == ["f", "g"]


def test_helpers_that_redefine_the_hosts_forms_send_tests_to_the_judge():
    assert split("assert sorted(f(1)) == [1]", "def sorted(x):\n    return x\n") is None


def test_a_test_that_names_nothing_of_the_program_is_refused():
    with pytest.raises(UnsplittableTest, match="test 1"):
        judge_plan(["assert f(1) == 2", "assert 1 + 1 == 2"])
    with pytest.raises(UnsplittableTest, match="not Python"):
        judge_plan(["assert f(1) =="])


def test_most_of_humaneval_splits_on_the_host():
    # Counted independently of split: problems whose check only holds asserts
    # of literal calls (16 compute an input, loop or feed a helper).
    problems = humaneval()
    on_host = [p for p in problems if split(p.tests[0], p.question) is not None]
    assert len(problems) - len(on_host) == 16
    assert {"HumanEval-32", "HumanEval-38", "HumanEval-53"}.isdisjoint(
        p.id for p in on_host
    )

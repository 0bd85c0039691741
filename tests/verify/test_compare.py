"""Outputs against expectations on the host: Python's equality, floats
within EvalPlus's tolerance, and no code of the program."""

from __future__ import annotations

import math

import pytest

from evoflow.sandbox.calls import Answer, Call
from evoflow.verify.cases import Expectation
from evoflow.verify.compare import equal, holds

CALL = Call("f")


@pytest.mark.parametrize(
    ("out", "expected", "same"),
    [
        (5, 5, True), (5, 6, False), ("a", "a", True), ("a", "A", False),
        (True, 1, True),  # Python's ==, as the assert had it
        (0.1 + 0.2, 0.3, True), (1.0, 1.0 + 2e-6, False),
        (1e9, 1e9 + 50, True),  # 1e-6 + 1e-7 * 1e9 = 100
        (math.inf, math.inf, True), (math.nan, math.nan, False),
        ([1, 2.0000001], [1, 2], True), ([1, 2], (1, 2), False),
        ({"a": 0.30000000000000004}, {"a": 0.3}, True), ({"a": 1}, {"b": 1}, False),
        ({0.1 + 0.2}, {0.3}, False),  # sets compare exactly
        (b"x", b"x", True), (None, 0, False),
    ],
)  # fmt: skip
def test_equality(out, expected, same):
    assert equal(out, expected) is same


def test_each_comparison():
    def check(how, out, expected=None, **kw):
        return holds(Answer(value=out), Expectation(CALL, how, expected, **kw))

    assert check("is", None, None) and not check("is", 0, None)
    assert check("is not", 1, True) and not check("is", 1, True)
    assert check("truthy", [0]) and check("falsy", "") and not check("falsy", 1)
    assert check("close", 0.3301, 0.33, tolerance=1e-3, strict=True)
    assert not check("close", 0.331, 0.33, tolerance=1e-3, strict=True)
    assert check("close", 3.1416, 3.14159, relative=1e-4)
    assert check("==", [3, 1, 2], [1, 2, 3], wrap="sorted")
    assert check("==", 2.2549, 2.25, wrap="round", digits=2)


def test_what_did_not_return_never_holds():
    expectation = Expectation(CALL, "==", None)
    for answer in (Answer(raised="ValueError"), Answer(unfit="a Yes is not data"),
                   Answer(lost=True)):  # fmt: skip
        assert not holds(answer, expectation)
    assert holds(Answer(value=None), expectation)


def test_a_comparison_that_cannot_be_made_fails():
    assert not holds(
        Answer(value=[1, "a"]), Expectation(CALL, "==", [1], wrap="sorted")
    )
    assert not holds(Answer(value="x"), Expectation(CALL, "close", 1.0, tolerance=1.0))
    assert not holds(Answer(value=10**400), Expectation(CALL, "==", 1.5))

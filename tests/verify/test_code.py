"""Code answers: tests run in the sandbox, fenced blocks are found."""

from __future__ import annotations

import pytest

from evoflow.sandbox import Limits
from evoflow.verify import check_code, extract_code

QUICK = Limits(seconds=3.0, memory_mb=512, output_kb=64)


def test_pass_rate_counts_the_tests_that_pass():
    program = "def square(x):\n    return x * x\n"
    tests = [
        "assert square(2) == 4",
        "assert square(-3) == 9",
        "assert square(3) == 10",
    ]
    verdict = check_code(program, tests, QUICK)
    assert (verdict.passed, verdict.total, verdict.status) == (2, 3, "failed")
    assert verdict.pass_rate == pytest.approx(2 / 3)


def test_a_program_that_never_finishes_scores_zero():
    verdict = check_code("while True:\n    pass", ["assert True"], QUICK)
    assert (verdict.pass_rate, verdict.status) == (0.0, "timeout")


def test_the_last_fenced_block_is_the_answer():
    reply = "First try:\n```python\nx = 1\n```\nBetter:\n```py\nx = 2\n```\nDone."
    assert extract_code(reply) == "x = 2\n"
    assert extract_code("x = 3") == "x = 3"


def test_code_without_tests_cannot_be_verified():
    with pytest.raises(ValueError, match="at least one test"):
        check_code("x = 1", [])

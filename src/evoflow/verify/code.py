"""Code answers by running their tests in the sandbox (``evoflow.sandbox``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from evoflow.sandbox import Limits, run_python

FENCE = re.compile(
    r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE
)


@dataclass(frozen=True)
class CodeVerdict:
    """Share of the tests that passed (0 when the program did not finish)."""

    pass_rate: float
    status: str  # evoflow.sandbox.STATUSES
    passed: int
    total: int
    seconds: float


def extract_code(text: str) -> str:
    """The last fenced code block of a reply, or the reply itself if it has none."""
    blocks = FENCE.findall(text)
    return blocks[-1] if blocks else text


def check_code(
    program: str, tests: list[str], limits: Limits | None = None
) -> CodeVerdict:
    """Run ``program``, then each test snippet (e.g. ``assert f(2) == 3``)."""
    if not tests:
        raise ValueError("a code answer needs at least one test to be verified")
    outcome = run_python(program, tests, limits)
    return CodeVerdict(outcome.pass_rate, outcome.status, outcome.passed,
                       outcome.total, outcome.seconds)  # fmt: skip

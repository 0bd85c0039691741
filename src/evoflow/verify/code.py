"""Code answers checked against their tests without showing the tests to the
program.

The program under test gets the inputs of its calls and nothing else: no
test, no expected value, no package it did not declare. What its functions
return leaves its sandbox as data and is compared outside it:

- on the host, where every test splits into calls with literal inputs and
  literal expectations (``evoflow.verify.cases.split``; most generated
  tests, most of HumanEval);
- otherwise in a second sandbox, the judge, which runs the tests as written
  and holds no generated code; the host relays each call of the program's
  functions to the program's sandbox and the answer back, as data
  (``evoflow.sandbox.calls.judge_program``).

A test passes when every check in it holds; a run that did not finish
(timeout, crash, memory) passes none. Test snippets, the Challenger's
included, are parsed on the host and run only in the judge.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from evoflow.sandbox import Limits, Outcome
from evoflow.sandbox.calls import call_program, judge_program
from evoflow.sandbox.codec import NotData
from evoflow.verify.cases import Expectation, UnsplittableTest, judge_plan, split
from evoflow.verify.compare import holds

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
    judged: bool = False  # the tests ran in the judge, not split on the host
    detail: str = ""  # the end of the program's error output


def extract_code(text: str) -> str:
    """The last fenced code block of a reply, or the reply itself if it has none."""
    blocks = FENCE.findall(text)
    return blocks[-1] if blocks else text


def code_helpers(text: str) -> str:
    """``text`` where it is Python source (a benchmark's prompt, whose
    helper functions its tests call), else ""."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    return text


def check_code(program: str, tests: list[str], limits: Limits | None = None, *,
               helpers: str = "") -> CodeVerdict:  # fmt: skip
    """Run ``program`` in the sandbox and check it against each test snippet
    (e.g. ``assert f(2) == 3``); ``helpers`` is trusted code the tests may
    call (a benchmark prompt's own functions), run only by the judge.
    ``UnsplittableTest`` names a test that cannot be split into inputs and
    expected values."""
    if not tests:
        raise ValueError("a code answer needs at least one test to be verified")
    limits = limits or Limits()
    plan = judge_plan(list(tests), helpers)  # names every test's needs, or refuses
    splits = [split(t, helpers) for t in tests]
    files = {"program.py": program}
    if all(s is not None for s in splits):
        return _on_host(files, splits, limits)
    return _judged(files, plan, limits)


def _on_host(
    files: dict, splits: list[list[Expectation]], limits: Limits
) -> CodeVerdict:
    """Every test split: the program answers the calls, the host compares."""
    calls = [e.call for s in splits for e in s]
    try:
        outcome, answers = call_program(files, calls, limits)
    except NotData as error:
        raise UnsplittableTest(f"an input cannot be sent as data: {error}") from None
    results, at = [], 0
    for s in splits:
        results.append(all(holds(a, e) for a, e in zip(answers[at:], s, strict=False)))
        at += len(s)
    return _verdict(outcome, results, outcome.seconds, judged=False)


def _judged(files: dict, plan: dict, limits: Limits) -> CodeVerdict:
    """The tests run in the judge, the program answers its calls."""
    worker, judge, verdict = judge_program(files, plan, limits)
    refused = [(i, v["refused"]) for i, v in enumerate(verdict or []) if "refused" in v]
    if refused:
        i, why = refused[0]
        raise UnsplittableTest(
            f"test {i} cannot be split into inputs and outputs: {why}"
        )
    outcome = worker if worker.status != "passed" else judge
    if verdict is None or len(verdict) != len(plan["tests"]):
        outcome = outcome if outcome.status != "passed" else _broken(judge)
    results = [bool(v["passed"]) for v in verdict or []]
    seconds = max(worker.seconds, judge.seconds)
    return _verdict(outcome, results, seconds, judged=True, total=len(plan["tests"]))


def _broken(judge: Outcome) -> Outcome:
    return Outcome("crashed", 0, 0, judge.seconds, judge.returncode, judge.stdout,
                   judge.stderr + "\nthe judge gave no verdict", True)  # fmt: skip


def _verdict(outcome: Outcome, results: list[bool], seconds: float, *,
             judged: bool, total: int | None = None) -> CodeVerdict:  # fmt: skip
    total = len(results) if total is None else total
    if outcome.status != "passed":
        return CodeVerdict(0.0, outcome.status, 0, total, seconds, judged,
                           outcome.stderr[-1000:])  # fmt: skip
    passed = sum(results)
    status = "passed" if passed == total else "failed"
    return CodeVerdict(passed / total, status, passed, total, seconds, judged,
                       outcome.stderr[-1000:])  # fmt: skip

"""Attacks on the code verifier, checked from the host: a program that cannot
solve its tests (their expected values are random tokens) must pass none of
them, on tests split on the host and on tests that need the judge, and must
leave no trace on the host. Each attack is described in ``attacks.py``."""

from __future__ import annotations

import pytest

from evoflow.sage.problems import humaneval
from evoflow.sandbox import Limits, run_python
from evoflow.verify import check_code

from . import attacks

LIMITS = Limits(seconds=15.0, memory_mb=1024, output_kb=1024, processes=32, disk_mb=16)


@pytest.mark.parametrize("kind", ["host", "judge"])
@pytest.mark.parametrize("name", list(attacks.ATTACKS))
def test_no_attack_passes_a_test_it_cannot_solve(name, kind, tmp_path):
    marker = tmp_path / "marker"
    program = attacks.ATTACKS[name].replace("MARKER", str(marker))
    tests, tokens = attacks.problem(kind)
    verdict = check_code(program, tests, LIMITS)
    assert verdict.judged == (kind == "judge")
    assert (verdict.passed, verdict.pass_rate) == (0, 0.0), verdict
    assert not marker.exists()  # nothing of the program ran on the host


def test_the_attacks_would_pass_with_the_expected_values_in_view():
    # The control: the same learning code, shown the tests as text, answers
    # every one, so a verifier that let the tests into the sandbox would fail
    # the suite above.
    tests, _ = attacks.problem("host")
    shown = attacks.LEARN + f"learn({tests!r})\ndef mystery(x):\n    return guess(x)\n"
    assert check_code(shown, tests, LIMITS).pass_rate == 1.0


def test_the_canonical_answers_of_humaneval_cannot_be_read():
    problem = humaneval()[0]
    program = f"TASK = {'HumanEval/0'!r}\n" + attacks.ANSWERS
    verdict = check_code(program, list(problem.tests), LIMITS, helpers=problem.question)
    assert verdict.pass_rate == 0.0, verdict
    # the control: run with the answers, the same program passes
    answers = f"TASK = {'HumanEval/0'!r}\nexec({problem.solution!r})\n"
    verdict = check_code(answers, list(problem.tests), LIMITS, helpers=problem.question)
    assert verdict.pass_rate == 1.0, verdict


def test_a_program_cannot_redefine_the_tests_helpers():
    # HumanEval/32 checks find_zero's root with the prompt's poly; a program
    # whose poly says 0 for everything passed while the tests ran in its
    # namespace. The judge takes poly from the prompt.
    problem = humaneval()[32]
    cheat = problem.question + "    return 0.0\n\ndef poly(xs, x):\n    return 0\n"
    verdict = check_code(cheat, list(problem.tests), LIMITS, helpers=problem.question)
    assert verdict.judged and verdict.pass_rate == 0.0, verdict


def test_the_sandbox_root_is_read_only():
    outcome = run_python(attacks.ROOT_FILL, LIMITS)
    assert "/filler Read-only file system" in outcome.stdout, outcome.stderr[-400:]
    assert "wrote" not in outcome.stdout

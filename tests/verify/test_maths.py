"""Math answers against hand-checked equivalences."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from evoflow.verify import MathVerifier


@pytest.fixture(scope="module")
def verifier():
    with MathVerifier(seconds=10) as v:
        yield v


@pytest.mark.parametrize(
    ("gold", "answer", "status"),
    [
        ("1/2", "0.5", "equal"),
        (r"\frac{1}{2}", r"The answer is \boxed{\frac{2}{4}}", "equal"),
        ("x^2+2x+1", "(x+1)^2", "equal"),  # expands to the same polynomial
        (r"2\sqrt{2}", r"\sqrt{8}", "equal"),  # sqrt(8) = 2 sqrt(2)
        (r"\{1,2\}", r"\{2,1\}", "equal"),  # sets ignore order
        ("12", "$12$ apples", "equal"),
        ("3", "4", "different"),
        ("12", "13 apples", "different"),
        (r"2\sqrt{2}", "2", "different"),
        ("", "5", "unparsable_gold"),
        ("7", "", "unparsable_answer"),
    ],
)
def test_equivalence(verifier, gold, answer, status):
    verdict = verifier.check(gold, answer)
    assert verdict.status == status
    assert verdict.correct is (status == "equal")


def test_a_gold_answer_must_parse(verifier):
    assert verifier.parses("42") and verifier.parses("x = 3")
    assert not verifier.parses("???") and not verifier.parses("")


def test_a_check_over_its_time_is_wrong_and_the_worker_recovers():
    # Prepare: a deeply nested formula math-verify cannot read in 0.3 s
    nested = "$" + "(" * 3000 + "1" + ")" * 3000 + "$"
    with MathVerifier(seconds=0.3) as slow:
        slow.check("1", "1")  # the worker is up
        # Execute
        verdict = slow.check("2", nested)
        # Assert
        assert (verdict.correct, verdict.status) == (False, "timeout")
        assert verdict.seconds < 3
        slow.seconds = 10
        assert slow.check("2", "2").correct  # a fresh worker answers


def test_a_new_workers_start_is_not_charged_to_the_first_check():
    # Importing and warming up math-verify takes ~1-3 s, far over 0.5 s; a
    # check charged with it would time out and count a right answer as wrong.
    with MathVerifier(seconds=0.5) as quick:
        verdict = quick.check("1/2", "0.5")
    assert (verdict.correct, verdict.status) == (True, "equal")
    assert verdict.seconds < 0.5


def test_a_worker_that_cannot_start_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with MathVerifier() as broken, pytest.raises(RuntimeError, match="did not start"):
        broken.check("1", "1")


def test_a_worker_that_dies_mid_check_costs_that_check_only():
    # Prepare: a check slow enough to kill the worker while it runs
    nested = "$" + "(" * 3000 + "1" + ")" * 3000 + "$"
    with MathVerifier(seconds=30) as v:
        v.check("1", "1")
        pid = v.worker_pid
        killer = threading.Timer(0.2, os.kill, (pid, signal.SIGKILL))
        killer.start()
        # Execute
        verdict = v.check("2", nested)
        killer.join()
        # Assert: wrong, not an exception; a fresh worker answers the next check
        assert (verdict.correct, verdict.status) == (False, "crashed")
        assert v.check("2", "2").correct and v.worker_pid != pid


def test_the_worker_never_reruns_the_callers_script(tmp_path):
    # A script that must not run twice (a Snakemake script opens its log, reads
    # the snakemake object): a multiprocessing "spawn" child would re-run it.
    script = tmp_path / "job.py"
    script.write_text(
        "assert __name__ == '__main__', 're-run'\n"
        "from evoflow.verify import MathVerifier\n"
        "with MathVerifier(seconds=20) as v:\n"
        "    print(v.check('1/2', '0.5').status)\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.stdout.strip() == "equal", run.stderr[-2000:]


def test_checks_from_many_threads(verifier):
    pairs = [(str(i), str(i if i % 3 else i + 1)) for i in range(30)]
    with ThreadPoolExecutor(6) as pool:
        verdicts = list(pool.map(lambda p: verifier.check(*p), pairs))
    assert [v.correct for v in verdicts] == [bool(i % 3) for i in range(30)]


def test_bad_time_limit_is_named():
    with pytest.raises(ValueError, match="seconds must be > 0"):
        MathVerifier(seconds=0)

"""SAGE's verifiers: checks per second, each against a bare baseline in one run,
and the verification time of one SAGE step.

- math: ``MathVerifier.check`` (math-verify in a worker process, time-bounded
  by the caller, the library's own timeouts off) vs calling math-verify's
  ``parse`` + ``verify`` directly in this process with its default
  ``signal.alarm`` timeouts (main thread only, no isolation), same pairs.
- code: ``check_code`` of the seed code problems' reference solutions (the
  sandbox: bubblewrap namespaces, a keeper and a worker process, rlimits,
  audit hook; the program gets only the calls' inputs and the host compares
  what they return) vs a bare ``subprocess.run([python, file])`` of the same
  program and asserts — the cost of the isolation and of keeping the
  expected values out;
- code, judged: the same problems with each test's input bound to a name
  first, so the tests run in the judge (a second sandbox) with the host
  relaying each call;
- a SAGE step: ``run_step`` with scripted replies on a pool of seed code
  problems (4 questions, 4 Solver samples each: 36 code checks), its wall
  time and the share of it spent in ``Checker`` (the code verifier).

    python benchmarks/verifiers.py [--math 400] [--code 40]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evoflow.policy.base import Generation
from evoflow.sage.pool import seeded
from evoflow.sage.problems import code_problem, math_problem
from evoflow.sage.step import Checker, SageSettings, run_step
from evoflow.verify import MathVerifier, check_code


def math_pairs(n: int) -> list[tuple[str, str]]:
    pairs = []
    for i in range(n):
        gold = math_problem(0, 1 + i % 4, i).answer
        answer = gold if i % 2 else f"{gold} + 1"
        pairs.append((gold, answer))
    return pairs


def bare_math(pairs) -> float:
    from math_verify import parse, verify

    clock = time.perf_counter()
    for gold, answer in pairs:
        verify(parse(f"${gold}$"), parse(f"${answer}$"))
    return len(pairs) / (time.perf_counter() - clock)


def ours_math(pairs) -> float:
    with MathVerifier() as verifier:
        verifier.check("1", "1")  # start the worker outside the clock
        clock = time.perf_counter()
        for gold, answer in pairs:
            verifier.check(gold, answer)
        return len(pairs) / (time.perf_counter() - clock)


def bare_code(problems) -> float:
    clock = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for i, p in enumerate(problems):
            path = Path(folder) / f"p{i}.py"
            path.write_text(p.solution + "\n" + "\n".join(p.tests) + "\n")
            subprocess.run([sys.executable, str(path)], capture_output=True, timeout=30)
    return len(problems) / (time.perf_counter() - clock)


def judged(test: str) -> str:
    """``assert f(ARGS) == V`` as ``args = (ARGS,)`` + ``assert f(*args) == V``."""
    call, expected = test.removeprefix("assert ").rsplit(" == ", 1)
    name, args = re.fullmatch(r"(\w+)\((.*)\)", call).groups()
    return f"args = ({args},)\nassert {name}(*args) == {expected}"


def ours_code(problems, judge: bool = False) -> float:
    clock = time.perf_counter()
    for p in problems:
        tests = [judged(t) for t in p.tests] if judge else list(p.tests)
        verdict = check_code(p.solution, tests)
        assert verdict.pass_rate == 1.0 and verdict.judged == judge, (p.id, verdict)
    return len(problems) / (time.perf_counter() - clock)


def sage_step() -> tuple[float, float, int]:
    """Wall seconds of one scripted SAGE step on code problems, the seconds
    the code verifier took, and the checks it made."""
    problems = [code_problem(0, i) for i in range(6)]
    question = ("<question>Write add(a, b).</question><tests>assert add(1, 2) == 3\n"
                "assert add(0, 0) == 0</tests><answer>def add(a, b):\n    return a + b"
                "</answer><type>code</type>")  # fmt: skip
    by_question = {p.question: p.solution for p in problems}
    by_question["Write add(a, b)."] = "def add(a, b):\n    return a + b\n"
    checks = [0]

    def ask(role: str, chats) -> list[Generation]:
        if role == "solver":
            checks[0] += len(chats)
        texts = []
        for chat in chats:
            prompt = chat[0]["content"]
            if role == "challenger":
                texts.append(question)
            elif role == "critic":
                texts.append("<score>9</score>")
            elif role == "planner":
                texts.append("<plan>1. write it</plan>")
            else:
                found = [s for q, s in by_question.items() if q in prompt]
                texts.append(f"<answer>{found[0] if found else ''}</answer>")
        return [Generation(t, 1, 1) for t in texts]

    with MathVerifier() as maths:
        checker = Checker(maths)
        clock = time.perf_counter()
        run_step(1, seeded(problems), ask, checker, SageSettings(), random.Random(0))
        wall = time.perf_counter() - clock
    return wall, checker.seconds, checks[0] + SageSettings().questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--math", type=int, default=400)
    parser.add_argument("--code", type=int, default=40)
    args = parser.parse_args()
    pairs = math_pairs(args.math)
    problems = [code_problem(0, i) for i in range(args.code)]
    bare, ours = bare_math(pairs), ours_math(pairs)
    print(f"math: bare math-verify {bare:.0f} checks/s, MathVerifier {ours:.0f} "
          f"checks/s, ratio {ours / bare:.2f}")  # fmt: skip
    bare, ours, judge = (
        bare_code(problems),
        ours_code(problems),
        ours_code(problems, True),
    )
    print(f"code: bare subprocess.run {bare:.1f} runs/s, sandbox {ours:.1f} checks/s "
          f"(ratio {ours / bare:.2f}), judged {judge:.1f} checks/s "
          f"(ratio {judge / bare:.2f})")  # fmt: skip
    wall, verifying, checks = sage_step()
    print(f"sage step: {wall:.2f} s, code verification {verifying:.2f} s "
          f"({checks} checks, {verifying / wall:.0%} of the step)")  # fmt: skip


if __name__ == "__main__":
    main()

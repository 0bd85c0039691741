"""SAGE's verifiers: checks per second, each against a bare baseline in one run.

- math: ``MathVerifier.check`` (math-verify in a worker process, time-bounded
  by the caller, the library's own timeouts off) vs calling math-verify's
  ``parse`` + ``verify`` directly in this process with its default
  ``signal.alarm`` timeouts (main thread only, no isolation), same pairs.
- code: ``check_code`` (the sandbox: bubblewrap namespaces, a keeper and a
  worker process, rlimits, audit hook, one-time token) vs a bare
  ``subprocess.run([python, file])`` of the same program and tests — the cost
  of the isolation.

    python benchmarks/verifiers.py [--math 400] [--code 40]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evoflow.sage.problems import code_problem, math_problem
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


def ours_code(problems) -> float:
    clock = time.perf_counter()
    for p in problems:
        verdict = check_code(p.solution, list(p.tests))
        assert verdict.pass_rate == 1.0, (p.id, verdict)
    return len(problems) / (time.perf_counter() - clock)


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
    bare, ours = bare_code(problems), ours_code(problems)
    print(f"code: bare subprocess.run {bare:.1f} runs/s, sandbox {ours:.1f} runs/s, "
          f"ratio {ours / bare:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

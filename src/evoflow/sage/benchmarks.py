"""The paper's benchmarks from local copies the user provides (none ship offline).

One JSON Lines file per benchmark, one problem per line:

- maths (GSM8K, MATH-500, AIME, AMC, OlympiadBench): ``{"question": ...,
  "answer": ...}`` — the answer as math-verify reads it (``72``, ``\\frac{3}{4}``);
- code (HumanEval+, MBPP+, LiveCodeBench): ``{"prompt": ..., "tests": [assert
  lines]}``, or HumanEval's own fields ``{"prompt", "test", "entry_point"}``
  (the test defines ``check(candidate)``, called on the entry point).

An optional ``"id"`` names a problem (default: ``<benchmark>-<line>``). A line
that is not a JSON object with these fields fails with the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

from evoflow.sage.problems import Problem


def load_benchmark(name: str, path: str | Path) -> list[Problem]:
    """The problems of one local benchmark file (``source`` = ``name``)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"sage.data.benchmarks.{name}: no file at {path}")
    problems = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            problems.append(_problem(name, json.loads(line) if _is_json(line) else None,
                                     f"{path}:{number}", number))  # fmt: skip
    if not problems:
        raise ValueError(f"sage.data.benchmarks.{name}: {path} holds no problem")
    return problems


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _problem(name: str, row, where: str, number: int) -> Problem:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object per line")
    pid = str(row.get("id") or f"{name}-{number}")
    if "answer" in row and "question" in row:
        return Problem(pid, "math", str(row["question"]), answer=str(row["answer"]),
                       level=0, source=name)  # fmt: skip
    if "prompt" in row and ("tests" in row or "test" in row):
        tests = row.get("tests")
        if tests is None:
            if "entry_point" not in row:
                raise ValueError(f"{where}: a 'test' needs its 'entry_point'")
            tests = [f"{row['test']}\ncheck({row['entry_point']})\n"]
        if not isinstance(tests, list) or not tests:
            raise ValueError(f"{where}: 'tests' must be a non-empty list of strings")
        return Problem(pid, "code", str(row["prompt"]), tests=tuple(map(str, tests)),
                       level=0, source=name)  # fmt: skip
    raise ValueError(
        f"{where}: need 'question' and 'answer' (maths) or 'prompt' and 'tests' / "
        f"'test' + 'entry_point' (code); got keys {sorted(row)}"
    )

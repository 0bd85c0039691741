"""SAGE's data, made offline: the seed pool, the held-out evaluation set, and
the warm-up chats that teach a small model the roles' tags.

HumanEval has no training split and the paper's seed set overlaps its
evaluation (SPEC-wave2 §3.4): we split its 164 problems in two by a hash of
the task id — the seed half may enter the pool, only the other half is
evaluated. Generated math is held out by index range, and an evaluation
question whose text equals a seed question is dropped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from evoflow.sage.benchmarks import load_benchmark
from evoflow.sage.pool import text_key
from evoflow.sage.problems import (
    CODE_TASKS,
    Problem,
    code_problem,
    humaneval,
    math_problem,
)

HELD_OUT = 100_000  # evaluation math problems use indices from here on


@dataclass(frozen=True)
class DataSettings:
    math_per_level: int = 20  # seed math problems per level
    math_levels: tuple[int, ...] = (1, 2, 3)
    code: int = len(CODE_TASKS)  # seed code tasks (at most one per task)
    humaneval: int = 0  # seed HumanEval problems, from the seed half
    eval_math_per_level: int = 10
    eval_math_levels: tuple[int, ...] = (1, 2, 3, 4)  # 4: harder than any seed level
    eval_humaneval: int = 20  # from the held-out half
    benchmarks: tuple[tuple[str, str], ...] = ()  # (name, local JSONL path), evaluated

    def __post_init__(self) -> None:
        if not 0 <= self.code <= len(CODE_TASKS):
            raise ValueError(
                f"sage.data.code must lie in [0, {len(CODE_TASKS)}], got {self.code}"
            )
        for name in (
            "math_per_level",
            "humaneval",
            "eval_math_per_level",
            "eval_humaneval",
        ):
            if getattr(self, name) < 0:
                raise ValueError(
                    f"sage.data.{name} must be >= 0, got {getattr(self, name)}"
                )


def humaneval_halves() -> tuple[list[Problem], list[Problem]]:
    """HumanEval split by task-id hash: (seed half, held-out half)."""
    halves: tuple[list[Problem], list[Problem]] = ([], [])
    for p in humaneval():
        digest = hashlib.sha256(p.id.encode()).digest()
        halves[digest[0] % 2].append(p)
    return halves


def seed_problems(s: DataSettings, seed: int) -> list[Problem]:
    problems = [math_problem(seed, level, i)
                for level in s.math_levels for i in range(s.math_per_level)]  # fmt: skip
    problems += [code_problem(seed, i) for i in range(s.code)]
    if s.humaneval:
        problems += humaneval_halves()[0][: s.humaneval]
    return _distinct(problems)


def eval_problems(s: DataSettings, seed: int) -> list[Problem]:
    seen = {text_key(p.question) for p in seed_problems(s, seed)}
    problems = [math_problem(seed, level, HELD_OUT + i)
                for level in s.eval_math_levels for i in range(s.eval_math_per_level)]  # fmt: skip
    problems = [p for p in _distinct(problems) if text_key(p.question) not in seen]
    if s.eval_humaneval:
        problems += humaneval_halves()[1][: s.eval_humaneval]
    for name, path in s.benchmarks:
        problems += load_benchmark(name, path)
    return problems


def _distinct(problems: list[Problem]) -> list[Problem]:
    kept, keys = [], set()
    for p in problems:
        key = text_key(p.question)
        if key not in keys:
            keys.add(key)
            kept.append(p)
    return kept

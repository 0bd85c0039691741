"""Programs that try to be counted as passing a test they fail. The program
defines ``inc`` correctly, so of its two tests the first passes and the
second (``inc(1) == 3``) must fail. Each forgery runs its trick first; all
of them aim at the worker, which no longer decides anything: the count is
made on the host from what ``inc`` returned."""

from __future__ import annotations

import pytest

from evoflow.sandbox import Limits
from evoflow.verify import check_code

FAST = Limits(seconds=8.0, memory_mb=512, output_kb=256, processes=32, disk_mb=8)
TESTS = ["assert inc(1) == 2", "assert inc(1) == 3"]
INC = "\ndef inc(x):\n    return x + 1\n"
FAKE_LINE = "'\\n' + 'f' * 32 + ' exit:0 2 2\\n'"

FORGERIES = {
    "replaces exec": "import builtins\nbuiltins.exec = lambda *a, **k: None",
    "replaces compile": (
        "import builtins\n_c = compile\n"
        "builtins.compile = lambda *a, **k: _c('pass', 'forged', 'exec')"
    ),
    "replaces print": (
        f"import builtins, sys\nbuiltins.print = lambda *a, **k: sys.stdout.write({FAKE_LINE})"
    ),
    "replaces sys.exit": "import sys\nsys.exit = lambda *a: None",
    "replaces os._exit": "import os\nos._exit = lambda *a: None",
    "rewrites what os.write sends": (
        "import os\n_w = os.write\nos.write = lambda fd, b: _w(fd, b.replace(b' 1 2', b' 2 2'))"
    ),
    "patches the builtins the harness uses": (
        "import builtins\nbuiltins.Exception = BaseException\nbuiltins.len = lambda x: 2\n"
        "builtins.enumerate = lambda xs: [(0, 'pass'), (1, 'pass')]\n"
        "builtins.dict = lambda *a: {'inc': lambda x: 2}"
    ),
    "patches the harness module": (
        "import sys\nh = sys.modules['__main__']\n"
        "for name in list(vars(h)):\n"
        "    if callable(getattr(h, name)) and not name.startswith('__'):\n"
        "        setattr(h, name, lambda *a, **k: None)\n"
        "h.TESTS = ['pass', 'pass']"
    ),
    "swaps the tests' builtins": (
        "__builtins__ = {'__import__': __import__, 'AssertionError': ZeroDivisionError}"
    ),
    "writes a guess of the token": f"import os, sys\nsys.stdout.write({FAKE_LINE})\nsys.stdout.flush()",
    "writes a guess and exits early": (
        f"import os, sys\nsys.stdout.write({FAKE_LINE})\nsys.stdout.flush()\nos._exit(0)"
    ),
    "raises SystemExit from inside a test": "import sys\ndef inc(x):\n    sys.exit(0)",
    "forks a writer and exits early": (
        "import multiprocessing as mp, os\n"
        f'code = "import sys, time\\nfor _ in range(50):\\n    sys.stdout.write({FAKE_LINE})'
        '\\n    sys.stdout.flush()\\n    time.sleep(0.01)"\n'
        "mp.get_context('spawn').Process(target=exec, args=(code,)).start()\nos._exit(0)"
    ),
    "traces the tests": "import sys\nsys.settrace(lambda *a: None)",
    "reads the collected garbage": "import gc\ngc.get_objects()",
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_no_forgery_counts_a_failing_test_as_passed(name):
    trick = FORGERIES[name]
    program = trick + INC if "def inc" not in trick else trick
    verdict = check_code(program, TESTS, FAST)
    assert verdict.passed <= 1 and verdict.pass_rate <= 0.5, verdict


def test_an_honest_program_is_counted_so():
    # The control: the same tests pass 1 of 2 without tricks, and printing
    # through a replaced print does not break counting.
    plain = check_code(INC, TESTS, FAST)
    assert (plain.status, plain.passed, plain.total) == ("failed", 1, 2)
    printed = check_code(
        "import builtins\nbuiltins.print = None" + INC, TESTS[:1], FAST
    )
    assert printed.pass_rate == 1.0


def test_a_program_defining_a_builtin_does_not_change_the_tests_builtin():
    program = "def sorted(xs):\n    return [3]" + INC
    verdict = check_code(program, ["assert sorted([inc(1)]) == [3]"], FAST)
    assert verdict.judged and verdict.passed == 0

"""Sandboxed runs of a program: what they keep, and escapes that end as a
failure, never a pass and never a hung test."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evoflow.sandbox import Limits, SandboxUnavailable, isolation, run_files, run_python
from evoflow.sandbox.launch import HARNESS, _receive
from evoflow.verify import check_code

FAST = Limits(seconds=3.0, memory_mb=512, output_kb=64)


def test_a_program_runs_and_its_output_is_kept():
    outcome = run_python("print('ready')", FAST)
    assert outcome.status == "passed" and outcome.stdout.strip() == "ready"
    assert (outcome.passed, outcome.total, outcome.pass_rate) == (0, 0, 1.0)


def test_files_inside_its_own_directory_work():
    program = "open('notes.txt', 'w').write('kept')\nprint(open('notes.txt').read())"
    outcome = run_python(program, FAST)
    assert outcome.ok and outcome.stdout.strip() == "kept"


def test_a_project_imports_its_modules_and_its_files_come_back():
    files = {"program.py": "import helper\nopen('out.txt', 'w').write(helper.WORD)\n",
             "helper.py": "WORD = 'from the module'\n"}  # fmt: skip
    outcome, kept = run_files(files, FAST, collect=("out.txt", "stdout"))
    assert outcome.ok, outcome.stderr[-300:]
    assert kept["out.txt"] == b"from the module" and kept["stdout"] == b""


ESCAPES = {
    "infinite loop": ("while True:\n    pass", "timeout"),
    "sleeps past the limit": ("import time\ntime.sleep(60)", "timeout"),
    "fork bomb": ("import os\nwhile True:\n    os.fork()", "crashed"),
    "subprocess": ("import subprocess\nsubprocess.run(['true'])", "crashed"),
    "os.system": ("import os\nos.system('true')", "crashed"),
    "multiprocessing": (
        "import multiprocessing as m\nm.Process(target=print).start()",
        "crashed",
    ),
    "huge output": ("while True:\n    print('x' * 4096)", "output"),
    "huge file": ("open('big', 'w').write('x' * 10**8)", "output"),
    "memory bomb": (
        "blocks = []\nwhile True:\n    blocks.append(bytearray(10**8))",
        "memory",
    ),
    "reads a host file": ("print(open('/etc/passwd').read())", "crashed"),
    "reads this repository": (f"open({__file__!r}).read()", "crashed"),
    "lists the host": ("import os\nprint(os.listdir('/'))", "crashed"),
    "writes outside": ("open('/tmp/evoflow-escaped', 'w').write('x')", "crashed"),
    "network": (
        "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)",
        "crashed",
    ),
    "raw socket": ("import socket\nsocket.socket()", "crashed"),
    "signals the parent": (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
        "crashed",
    ),
    "ctypes call": ("import ctypes\nctypes.CDLL(None).fork()", "crashed"),
    "sys.exit(0) before its end": ("import sys\nsys.exit(0)", "crashed"),
    "os._exit(0) before its end": ("import os\nos._exit(0)", "crashed"),
    "fakes the harness's last line": (
        "import os, sys\nprint('\\n' + 'f' * 32 + ' 1 1')\nsys.stdout.flush()\nos._exit(0)",
        "crashed",
    ),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_attempts_fail(name):
    program, status = ESCAPES[name]
    started = time.perf_counter()
    outcome = run_python(program, FAST)
    assert outcome.status == status, (outcome.status, outcome.stderr[-300:])
    assert not outcome.ok and outcome.pass_rate == 0.0
    assert time.perf_counter() - started < FAST.seconds + 5  # never hangs


def test_every_run_is_isolated():
    # test_escapes.py checks what the isolation holds, from the host.
    assert run_python("", FAST).isolated


@settings(max_examples=25, deadline=None)
@given(st.text(max_size=200))
def test_no_program_passes_a_test_it_cannot_know(program):
    verdict = check_code(program, ["assert f(0) == 'e3b0c44298fc1c149afbf4c8'"], FAST)
    assert verdict.passed == 0 and verdict.pass_rate == 0.0


def test_bad_limits_are_named():
    with pytest.raises(ValueError, match="memory_mb >= 64"):
        Limits(memory_mb=1)


def test_without_bubblewrap_nothing_runs(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    isolation._bwrap.cache_clear()
    isolation.check.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="bubblewrap"):
            run_python("print('ran')", FAST)
    finally:
        isolation._bwrap.cache_clear()
        isolation.check.cache_clear()


def test_the_harness_refuses_to_run_outside_its_namespace(tmp_path):
    done = subprocess.run([sys.executable, "-I", str(HARNESS), str(tmp_path / "run.json")],
                          capture_output=True, text=True, timeout=30, cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0 and "pid namespace" in done.stderr


def test_the_harness_files_cannot_be_replaced():
    with pytest.raises(ValueError, match="harness's own"):
        run_files({"program.py": "", "harness.py": "print('mine')"}, FAST)


@pytest.mark.parametrize(
    "stream",
    [
        b'{"name": "a", "size": 0}}',  # a header without its newline
        b'{"name": "a", "size": -5}\nxyz',  # a size pointing back
        b'{"name": "a", "size": 99}\nshort',  # fewer bytes than announced
        b'{"name": "a", "size": 1}\nx{"verdict": {"how": 3}}\n',  # how is not text
        b"x" * 10_000,  # no header at all
    ],
)
def test_a_malformed_stream_from_the_keeper_ends_the_reading(stream):
    read, write = os.pipe()
    os.write(write, stream)
    os.close(write)
    sent: dict = {"files": {}, "verdict": None}
    _receive(os.fdopen(read, "rb"), 2**20, sent)  # returns: never loops on a bad header
    assert sent["verdict"] is None
    assert all(len(v) <= 1 for v in sent["files"].values())

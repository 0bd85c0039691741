"""Run untrusted Python (generated code, its tests) in a sandbox.

Each run gets its own temporary directory (removed afterwards) and a fresh
``python -I`` process in its own session with:

- a wall-clock timeout (the whole process group is killed), and CPU-time,
  address-space and file-size limits (``resource.setrlimit``);
- no network: a fresh network namespace (``unshare --net``) where the kernel
  allows one, and in any case an audit hook that refuses sockets;
- the audit hook of ``evoflow.sandbox.harness``: no files outside its
  directory (Python's installation may be read), no new processes, no
  ``ctypes``;
- an empty environment (``PATH``, ``HOME`` and ``TMPDIR`` only, the latter
  two its directory) and stdout/stderr written to files, read back capped.

A run passes only when the harness prints its one-time token last, after the
program and every test ran to their end — exit code 0 alone proves nothing.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HARNESS = Path(__file__).with_name("harness.py")
STATUSES = ("passed", "failed", "timeout", "memory", "output", "crashed")
TAIL = 4096  # bytes of stdout / stderr kept in an Outcome


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use."""

    seconds: float = 10.0  # wall clock
    memory_mb: int = 1024  # address space
    output_kb: int = 512  # largest file it may write (its stdout included)

    def __post_init__(self) -> None:
        if self.seconds <= 0 or self.memory_mb < 64 or self.output_kb < 1:
            raise ValueError(
                f"sandbox limits need seconds > 0, memory_mb >= 64 and output_kb >= 1, "
                f"got {self.seconds}, {self.memory_mb}, {self.output_kb}"
            )


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``status`` is one of ``STATUSES``; ``passed`` of
    ``total`` tests finished (a program without tests: 0 of 0)."""

    status: str
    passed: int
    total: int
    seconds: float
    returncode: int | None
    stdout: str  # the end of the program's output (without the harness's line)
    stderr: str  # the end of its error output
    isolated_network: bool

    @property
    def ok(self) -> bool:
        return self.status == "passed" and self.passed == self.total

    @property
    def pass_rate(self) -> float:
        """Share of the tests that passed; 0 for a run that did not finish."""
        if self.status not in ("passed", "failed"):
            return 0.0
        return self.passed / self.total if self.total else 1.0


def run_python(program: str, tests: list[str] | None = None,
               limits: Limits | None = None) -> Outcome:  # fmt: skip
    """Run ``program`` then each of ``tests`` (Python snippets, e.g. asserts)
    in its namespace, in a fresh sandbox."""
    files = {"program.py": program}
    if tests is not None:
        files["tests.json"] = json.dumps(list(tests))
    outcome, _ = run_files(files, limits)
    return outcome


def run_files(files: dict[str, str | bytes], limits: Limits | None = None,
              collect: tuple[str, ...] = ()) -> tuple[Outcome, dict[str, bytes]]:  # fmt: skip
    """Run ``program.py`` of a project (``files``: relative path → content;
    its folder is on ``sys.path``, so it may import its other modules) in a
    fresh sandbox, and read back the files named in ``collect`` that the run
    left (``stdout`` and ``stderr`` are the whole outputs)."""
    limits = limits or Limits()
    if "program.py" not in files:
        raise ValueError(f"a sandboxed project needs a program.py, got {sorted(files)}")
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="evoflow-sandbox-") as home:
        root = Path(home)
        for name, content in files.items():
            target = _inside(root, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(target, mode) as handle:
                handle.write(content)
        shutil.copy(HARNESS, root / "harness.py")
        started = time.perf_counter()
        returncode, timed_out = _execute(root, token, limits)
        seconds = time.perf_counter() - started
        out, err = _tail(root / "stdout"), _tail(root / "stderr")
        kept = {
            n: (root / n).read_bytes() for n in collect if _inside(root, n).is_file()
        }
    total = len(json.loads(files["tests.json"])) if "tests.json" in files else 0
    return _outcome(token, out, err, returncode, timed_out, seconds, total), kept


def _inside(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if root.resolve() not in target.parents:
        raise ValueError(f"sandbox file {name!r} would land outside its folder")
    return target


def _execute(root: Path, token: str, limits: Limits) -> tuple[int | None, bool]:
    command = [*_net_isolation(), sys.executable, "-I", "harness.py",
               str(int(limits.seconds) + 1), str(limits.memory_mb * 2**20),
               str(limits.output_kb * 2**10)]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "HOME": str(root), "TMPDIR": str(root),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}  # fmt: skip
    with open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdin=subprocess.PIPE, stdout=out,
            stderr=err, start_new_session=True,
        )  # fmt: skip
        try:
            process.communicate(f"{token}\n".encode(), timeout=limits.seconds)
            return process.returncode, False
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return None, True


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@functools.cache
def _net_isolation() -> tuple[str, ...]:
    """``unshare`` into a new network namespace, if this kernel lets us."""
    command = ("unshare", "--net", "--map-root-user")
    if shutil.which("unshare") is None:
        return ()
    try:
        done = subprocess.run([*command, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return command if done.returncode == 0 else ()


def _tail(path: Path, size: int = TAIL) -> str:
    """The last ``size`` bytes of a file the run wrote."""
    with open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - size))
        return handle.read().decode("utf-8", errors="replace")


def _outcome(token, out, err, returncode, timed_out, seconds, total) -> Outcome:
    body, _, last = out.rstrip("\n").rpartition("\n")
    fields = last.split()
    finished = returncode == 0 and len(fields) == 3 and fields[0] == token
    passed = int(fields[1]) if finished else 0
    if finished:
        status = "passed" if passed == total else "failed"
    elif timed_out or returncode == -signal.SIGXCPU:
        status = "timeout"
    elif returncode == -signal.SIGXFSZ or "File too large" in err:
        status = "output"
    elif "MemoryError" in err:
        status = "memory"
    else:
        status = "crashed"
    return Outcome(status, passed, total, round(seconds, 4), returncode,
                   body if finished else out, err, bool(_net_isolation()))  # fmt: skip

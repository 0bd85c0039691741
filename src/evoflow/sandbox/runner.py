"""Run untrusted Python (generated code, its tests) in a sandbox.

Each run gets its own temporary folder on the host (removed afterwards) for
its inputs and its stdout / stderr, and runs inside the OS boundary of
``evoflow.sandbox.isolation`` (bubblewrap: its own user, pid, network and ipc
namespaces, a read-only view of ``/usr`` and the interpreter, a size-capped
writable folder, a process cap). Within the boundary:

- ``evoflow.sandbox.harness`` lowers CPU-time, address-space, file-size,
  open-file and process limits;
- it runs the program in a worker process, under an audit hook as defence in
  depth;
- the host kills the whole sandbox at the wall-clock limit.

The keeper process of the harness alone holds a pipe to the host. On it
come the files a caller asks to ``collect`` (capped at the disk limit) and
last its verdict: how the worker that ran the program ended, and how many
tests it reported passed after every test ran. A run passes only with that
verdict. Exit code 0 and anything the program prints prove nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from evoflow.sandbox import isolation

HARNESS = Path(__file__).with_name("harness.py")
RESERVED = ("harness.py", "run.json")  # the harness and its settings, in the inbox
STATUSES = ("passed", "failed", "timeout", "memory", "output", "crashed")
TAIL = 4096  # bytes of stdout / stderr kept in an Outcome
HEADER = 4096  # longest header line the keeper sends


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use."""

    seconds: float = 10.0  # wall clock
    memory_mb: int = 1024  # address space of each process
    output_kb: int = 512  # largest file it may write (its stdout included)
    processes: int = 64  # processes and threads at once
    disk_mb: int = 256  # writable space in its folder (and again in /tmp)

    def __post_init__(self) -> None:
        if (self.seconds <= 0 or self.memory_mb < 64 or self.output_kb < 1
                or self.processes < 4 or self.disk_mb < 1):  # fmt: skip
            raise ValueError(
                f"sandbox limits need seconds > 0, memory_mb >= 64, output_kb >= 1, "
                f"processes >= 4 and disk_mb >= 1, got {self.seconds}, {self.memory_mb}, "
                f"{self.output_kb}, {self.processes}, {self.disk_mb}"
            )


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``status`` is one of ``STATUSES``; ``passed`` of
    ``total`` tests finished (a program without tests: 0 of 0)."""

    status: str
    passed: int
    total: int
    seconds: float
    returncode: int | None  # the worker's (negative: killed by that signal)
    stdout: str  # the end of the program's output (without the harness's line)
    stderr: str  # the end of its error output
    isolated: (
        bool  # ran inside the OS boundary (False only for a run refused before it)
    )

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
    taken = sorted(set(files) & set(RESERVED))
    if taken:
        raise ValueError(f"sandbox file names {taken} are the harness's own")
    isolation.check()
    total = len(json.loads(files["tests.json"])) if "tests.json" in files else 0
    with tempfile.TemporaryDirectory(prefix="evoflow-sandbox-") as home:
        root = Path(home)
        inbox = root / "in"
        for name, content in files.items():
            target = _inside(inbox, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(
                content if isinstance(content, bytes) else content.encode()
            )
        shutil.copy(HARNESS, inbox / "harness.py")
        wanted = [n for n in collect if n not in ("stdout", "stderr")]
        started = time.perf_counter()
        timed_out, sent = _execute(root, limits, wanted, total)
        seconds = time.perf_counter() - started
        out, err = _tail(root / "stdout"), _tail(root / "stderr")
        kept = {
            n: (root / n).read_bytes() for n in collect if n in ("stdout", "stderr")
        }
    kept.update({n: data for n, data in sent["files"].items() if n in wanted})
    return _outcome(sent["verdict"], out, err, timed_out, seconds, total), kept


def _inside(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if root.resolve() not in target.parents:
        raise ValueError(f"sandbox file {name!r} would land outside its folder")
    return target


def _execute(root: Path, limits: Limits, collect: list[str],
             total: int) -> tuple[bool, dict]:  # fmt: skip
    """Run the harness in the sandbox; whether the wall clock stopped it, and
    what the keeper sent back (``files`` and its ``verdict``, None if none)."""
    disk = limits.disk_mb * 2**20
    sent: dict = {"files": {}, "verdict": None}
    pipe_r, pipe_w = os.pipe()
    reader = threading.Thread(target=_receive, args=(pipe_r, disk, sent), daemon=True)
    handed = False  # pipe_r belongs to the reader once it runs
    try:
        config = {"collect": collect, "collect_fd": pipe_w, "tests": total,
                  "limits": _rlimits(limits)}  # fmt: skip
        (root / "in" / "run.json").write_text(json.dumps(config))
        command = [*isolation.command(root / "in", disk), sys.executable, "-I",
                   f"{isolation.INBOX}/harness.py", f"{isolation.INBOX}/run.json"]  # fmt: skip
        with (open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err,
              isolation.process_cap(limits.processes) as prefix):  # fmt: skip
            process = subprocess.Popen(
                [*prefix, *command], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                pass_fds=(pipe_w,), start_new_session=True,
            )  # fmt: skip
            os.close(pipe_w)
            pipe_w = -1
            reader.start()
            handed = True
            try:
                process.wait(timeout=limits.seconds)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill_group(process)
                timed_out = True
    finally:
        if pipe_w >= 0:
            os.close(pipe_w)
        if not handed:
            os.close(pipe_r)
    reader.join(timeout=10)
    return timed_out, sent


def _rlimits(limits: Limits) -> dict[str, int]:
    return {"RLIMIT_CPU": int(limits.seconds) + 1, "RLIMIT_AS": limits.memory_mb * 2**20,
            "RLIMIT_FSIZE": limits.output_kb * 2**10, "RLIMIT_CORE": 0,
            "RLIMIT_NOFILE": 64, "RLIMIT_NPROC": limits.processes}  # fmt: skip


def _receive(fd: int, cap: int, into: dict) -> None:
    """Read what the keeper sends (per file a JSON header line and its bytes,
    then the verdict's header line), at most ``cap`` bytes; a malformed
    stream ends the reading and keeps no verdict."""
    data = bytearray()
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read(65536):
            if len(data) + len(chunk) > cap + HEADER:
                return
            data += chunk
    at = 0
    while at < len(data):
        end = data.find(b"\n", at, at + HEADER)
        try:
            header = json.loads(data[at:end]) if end >= 0 else None
            if isinstance(header, dict) and set(header) == {"verdict"}:
                into["verdict"] = _verdict(header["verdict"])
                return
            name, size = str(header["name"]), int(header["size"])
        except (ValueError, KeyError, TypeError):
            return
        if not 0 <= size <= len(data) - end - 1:
            return
        into["files"][name] = bytes(data[end + 1 : end + 1 + size])
        at = end + 1 + size


def _verdict(verdict) -> dict:
    how, passed, total = verdict["how"], int(verdict["passed"]), int(verdict["total"])
    if not isinstance(how, str):
        raise TypeError("a verdict's 'how' is text")
    return {"how": how, "passed": passed, "total": total}


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _tail(path: Path, size: int = TAIL) -> str:
    """The last ``size`` bytes of a file the run wrote."""
    with open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - size))
        return handle.read().decode("utf-8", errors="replace")


def _outcome(verdict, out, err, timed_out, seconds, total) -> Outcome:
    how = verdict["how"] if verdict else ""
    returncode = _returncode(how)
    finished = (verdict is not None and how == "exit:0" and verdict["passed"] >= 0
                and verdict["total"] == total)  # fmt: skip
    passed = verdict["passed"] if finished else 0
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
    return Outcome(status, passed, total, round(seconds, 4), returncode, out, err, True)


def _returncode(how: str) -> int | None:
    kind, _, number = how.partition(":")
    if not number.lstrip("-").isdigit():
        return None
    return -int(number) if kind == "signal" else int(number)

"""Starting one sandbox: its folder on the host, its pipes and its process.

A ``Sandbox`` (a context manager) writes the run's inputs into a fresh
temporary folder, starts the harness inside the OS boundary and gives the
host three pipes: the keeper's channel (collected files, then how the worker
ended), read by a thread; the worker's outbound lines (``read_line``); and,
for a run whose worker answers the host as it goes, the worker's inbound
pipe (``send``). Leaving the context kills whatever is left and removes the
folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from evoflow.sandbox import codec, isolation
from evoflow.sandbox.outcome import Limits

HERE = Path(__file__).parent
HARNESS = HERE / "harness.py"
INSIDE = ("harness.py", "codec.py", "judging.py")  # copied into every inbox
RESERVED = ("harness.py", "run.json", "codec.py", "judging.py", "calls.jsonl",
            "judge.json")  # fmt: skip
HEADER = 4096  # longest header line the keeper sends
LINE = codec.LIMIT + 4096  # longest line the worker may send
LINES = 32 * 2**20  # bytes of lines kept from one worker
TAIL = 4096  # bytes of stdout / stderr kept


class Sandbox:
    """One sandboxed harness run (see the module note)."""

    def __init__(self, files: dict[str, str | bytes], limits: Limits, *,
                 role: str = "program", collect: tuple[str, ...] = (),
                 packages: tuple[str, ...] = (), inbound: str = "none",
                 own: dict[str, str] | None = None) -> None:  # fmt: skip
        if inbound not in ("none", "file", "pipe"):
            raise ValueError(f"inbound must be none, file or pipe, got {inbound!r}")
        self.files, self.limits, self.role = files, limits, role
        self.collect, self.packages, self.inbound = collect, packages, inbound
        self.own = own or {}
        self.sent: dict = {"files": {}, "verdict": None}
        self.timed_out = False
        self.started = 0.0
        self._fds: set[int] = set()  # pipe ends this side still holds
        self._stack = contextlib.ExitStack()
        self._stack.callback(self._close_all)

    def __enter__(self) -> Sandbox:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(OSError):
            if self.process.poll() is None:
                self.kill()
        self._stack.close()

    def _start(self) -> None:
        self.root = Path(self._stack.enter_context(
            tempfile.TemporaryDirectory(prefix="evoflow-sandbox-")))  # fmt: skip
        inbox = self.root / "in"
        for name, content in {**self.files, **self.own}.items():
            target = _inside(inbox, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(
                content if isinstance(content, bytes) else content.encode()
            )
        for name in INSIDE:
            shutil.copy(HERE / name, inbox / name)
        channel_r, channel_w = self._pipe()
        outbound_r, outbound_w = self._pipe()
        worker_fds, inbound = [outbound_w], None
        if self.inbound == "pipe":
            inbound, inbound_w = self._pipe()
            worker_fds.append(inbound)
            self._requests = self._stack.enter_context(self._own(inbound_w, "wb", 0))
        elif self.inbound == "file":
            inbound = f"{isolation.INBOX}/calls.jsonl"
        config = {"role": self.role, "collect": list(self.collect),
                  "channel_fd": channel_w, "outbound_fd": outbound_w,
                  "inbound": inbound, "worker_fds": worker_fds,
                  "limits": self.limits.rlimits()}  # fmt: skip
        (inbox / "run.json").write_text(json.dumps(config))
        self._popen(inbox, [channel_w, *worker_fds])
        self.answers = self._stack.enter_context(self._own(outbound_r, "rb"))
        channel = self._own(channel_r, "rb")
        self._reader = threading.Thread(target=_receive, daemon=True,
            args=(channel, self.limits.disk_mb * 2**20, self.sent))  # fmt: skip
        self._reader.start()
        self._stack.callback(self._reader.join, 10)

    def _pipe(self) -> tuple[int, int]:
        read, write = os.pipe()
        self._fds |= {read, write}
        return read, write

    def _own(self, fd: int, mode: str, buffering: int = -1):
        """A file object that from now on owns ``fd``."""
        self._fds.discard(fd)
        return os.fdopen(fd, mode, buffering)

    def _release(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.discard(fd)
            os.close(fd)

    def _close_all(self) -> None:
        for fd in list(self._fds):
            self._release(fd)

    def _popen(self, inbox: Path, child_fds: list[int]) -> None:
        disk = self.limits.disk_mb * 2**20
        command = [*isolation.command(inbox, disk, self.packages), isolation.INTERPRETER,
                   "-I", "-B", f"{isolation.INBOX}/harness.py",
                   f"{isolation.INBOX}/run.json"]  # fmt: skip
        out = self._stack.enter_context(open(self.root / "stdout", "wb"))
        err = self._stack.enter_context(open(self.root / "stderr", "wb"))
        prefix = self._stack.enter_context(isolation.process_cap(self.limits.processes))
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [*prefix, *command], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            pass_fds=tuple(child_fds), start_new_session=True,
        )  # fmt: skip
        for fd in child_fds:
            self._release(fd)  # the sandbox's ends

    def send(self, line: bytes) -> bool:
        """Write one line to the worker's inbound pipe; False once it is closed."""
        try:
            self._requests.write(line)
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def close_inbound(self) -> None:
        with contextlib.suppress(OSError):
            self._requests.close()

    def read_line(self) -> bytes | None:
        """The worker's next line, None at its end or past ``LINE`` bytes."""
        line = self.answers.readline(LINE)
        return line if line.endswith(b"\n") else None

    def gather(self) -> list[bytes]:
        """Start a thread that keeps the worker's lines (``LINES`` bytes at
        most; a line past ``LINE`` bytes ends them); the list it fills."""
        lines: list[bytes] = []

        def read() -> None:
            size = 0
            while (line := self.read_line()) is not None and size + len(line) <= LINES:
                lines.append(line)
                size += len(line)

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        self._stack.callback(thread.join, 10)
        self._gatherer = thread
        return lines

    def gathered(self) -> None:
        """Wait for the lines of ``gather`` (after ``wait``)."""
        self._gatherer.join(timeout=10)

    def wait(self, deadline: float) -> None:
        """Wait for the run to end, killing it at ``deadline`` (perf_counter).
        A pidfd wakes the host the moment the run ends (``Popen.wait`` with a
        timeout polls, up to 50 ms late)."""
        if not _ended(self.process.pid, max(0.0, deadline - time.perf_counter())):
            self.kill()
            self.timed_out = True
        self.process.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def finish(self) -> tuple[str, str, str, float]:
        """How the worker ended (``exit:N``, ``signal:N`` or ""), the ends of
        stdout and stderr, and the seconds the run took; after ``wait``."""
        self._reader.join(timeout=10)
        seconds = time.perf_counter() - self.started
        verdict = self.sent["verdict"]
        return (verdict["how"] if verdict else "", _tail(self.root / "stdout"),
                _tail(self.root / "stderr"), seconds)  # fmt: skip

    def whole(self, name: str) -> bytes:
        """All of ``stdout`` or ``stderr``."""
        return (self.root / name).read_bytes()


def _ended(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` (a child) ends within ``seconds``."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:  # a kernel without pidfds (before Linux 5.3): poll
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return True
            time.sleep(0.002)
        return False
    try:
        return bool(select.select([handle], [], [], seconds)[0])
    finally:
        os.close(handle)


def _inside(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if root.resolve() not in target.parents:
        raise ValueError(f"sandbox file {name!r} would land outside its folder")
    return target


def _receive(pipe, cap: int, into: dict) -> None:
    """Read what the keeper sends (per file a JSON header line and its bytes,
    then the verdict's header line), at most ``cap`` bytes; a malformed
    stream ends the reading and keeps no verdict."""
    data = bytearray()
    with pipe:
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
                how = header["verdict"]["how"]
                if isinstance(how, str):
                    into["verdict"] = {"how": how}
                return
            name, size = str(header["name"]), int(header["size"])
        except (ValueError, KeyError, TypeError):
            return
        if not 0 <= size <= len(data) - end - 1:
            return
        into["files"][name] = bytes(data[end + 1 : end + 1 + size])
        at = end + 1 + size


def _tail(path: Path, size: int = TAIL) -> str:
    """The last ``size`` bytes of a file the run wrote."""
    with open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - size))
        return handle.read().decode("utf-8", errors="replace")

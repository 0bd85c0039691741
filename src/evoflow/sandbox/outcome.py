"""What a sandboxed run may use (``Limits``) and how it ended (``Outcome``)."""

from __future__ import annotations

import signal
from dataclasses import dataclass

STATUSES = ("passed", "failed", "timeout", "memory", "output", "crashed")


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

    def rlimits(self) -> dict[str, int]:
        """The resource limits the harness lowers (hard) before anything runs."""
        return {"RLIMIT_CPU": int(self.seconds) + 1, "RLIMIT_AS": self.memory_mb * 2**20,
                "RLIMIT_FSIZE": self.output_kb * 2**10, "RLIMIT_CORE": 0,
                "RLIMIT_NOFILE": 64, "RLIMIT_NPROC": self.processes}  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``status`` is one of ``STATUSES``; ``passed`` of
    ``total`` tests held (a program without tests: 0 of 0)."""

    status: str
    passed: int
    total: int
    seconds: float
    returncode: int | None  # the worker's (negative: killed by that signal)
    stdout: str  # the end of the program's output
    stderr: str  # the end of its error output
    isolated: (
        bool  # ran inside the OS boundary (False only for a run refused before it)
    )

    @property
    def ok(self) -> bool:
        return self.status == "passed" and self.passed == self.total

    @property
    def pass_rate(self) -> float:
        """Share of the tests that held; 0 for a run that did not finish."""
        if self.status not in ("passed", "failed"):
            return 0.0
        return self.passed / self.total if self.total else 1.0


def ended(
    how: str, finished: bool, timed_out: bool, stderr: str
) -> tuple[str, int | None]:
    """A run's status (``passed`` standing for "ran to its end") and its
    worker's return code, from how the keeper saw the worker end
    (``exit:N`` / ``signal:N``, "" if it said nothing), whether the worker
    wrote its last line, the wall clock and the error output."""
    returncode = _returncode(how)
    if finished and how == "exit:0":
        return "passed", returncode
    if timed_out or returncode == -signal.SIGXCPU:
        return "timeout", returncode
    if returncode == -signal.SIGXFSZ or "File too large" in stderr:
        return "output", returncode
    if "MemoryError" in stderr:
        return "memory", returncode
    return "crashed", returncode


def _returncode(how: str) -> int | None:
    kind, _, number = how.partition(":")
    if not number.lstrip("-").isdigit():
        return None
    return -int(number) if kind == "signal" else int(number)

"""Math answers by symbolic equivalence (PyPI ``math-verify``), time-bounded.

``math-verify`` bounds its own parsing and comparison with ``signal.alarm``,
which only works in a process's main thread — not in the rollout engine's
threads. So checks run in a worker process (``python -m evoflow.verify.maths``,
one JSON line per request and per answer: a plain subprocess, so it never
re-runs the caller's main script as a multiprocessing child would, e.g. a
Snakemake script) with math-verify's own timeouts off, and the caller waits at most ``seconds`` per check: a check that takes
longer (a pathological expression) gets the worker killed and restarted and
counts as wrong, with status ``timeout``. A new worker's start (importing and
warming up the library, seconds on a busy machine) is not charged to a check:
it says when it is ready, within ``STARTUP_SECONDS``. A worker that dies or raises on an
input (status ``crashed`` / ``error``; its memory is capped at ``MEMORY_MB``)
costs that check only: it counts as wrong and the next check gets a fresh
worker. The gold answer is parsed first, as math-verify requires (its
comparison is not symmetric).
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)
STATUSES = ("equal", "different", "unparsable_gold", "unparsable_answer", "timeout",
            "error", "crashed")  # fmt: skip
MEMORY_MB = 2048  # address-space cap of the worker
STARTUP_SECONDS = 120.0
READY = "ready"


@dataclass(frozen=True)
class MathVerdict:
    """``correct`` only when both parse and are equivalent (status ``equal``)."""

    correct: bool
    status: str
    seconds: float


class MathVerifier:
    """A worker process answering ``check(gold, answer)``; thread-safe.

    Use as a context manager, or call ``close()``.
    """

    def __init__(self, seconds: float = 5.0) -> None:
        if seconds <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        self.seconds = seconds
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None

    def check(self, gold: str, answer: str) -> MathVerdict:
        """Is ``answer`` symbolically equal to ``gold``?"""
        return self._ask(("check", str(gold), str(answer)))

    def parses(self, text: str) -> bool:
        """Does ``text`` hold an answer math-verify can read (a valid gold)?"""
        return self._ask(("parses", str(text), "")).status == "equal"

    def _ask(self, request: tuple) -> MathVerdict:
        with self._lock:
            self._ensure_worker()
            started = time.perf_counter()
            try:
                self._process.stdin.write(json.dumps(request).encode() + b"\n")
                self._process.stdin.flush()
                if not select.select([self._process.stdout], [], [], self.seconds)[0]:
                    log.warning(
                        "math check over %.1f s; restarting the worker", self.seconds
                    )
                    self._stop()
                    return MathVerdict(False, "timeout", time.perf_counter() - started)
                line = self._process.stdout.readline()
                status = json.loads(line) if line else "no answer"
            except (OSError, ValueError) as error:
                status = f"unreadable ({error})"
            if status not in STATUSES:  # the worker died mid-check
                log.warning("math worker died (%s); the check counts as wrong", status)
                self._stop()
                return MathVerdict(False, "crashed", time.perf_counter() - started)
            return MathVerdict(status == "equal", status, time.perf_counter() - started)

    def _ensure_worker(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        self._stop()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "evoflow.verify.maths"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
        )  # fmt: skip
        ready = select.select([self._process.stdout], [], [], STARTUP_SECONDS)[0]
        line = self._process.stdout.readline() if ready else b""
        if line.strip() != json.dumps(READY).encode():
            self._stop()
            raise RuntimeError(
                f"the math-verify worker did not start within {STARTUP_SECONDS:.0f} s "
                f"(python -m evoflow.verify.maths; is math-verify installed?)"
            )

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            for pipe in (self._process.stdin, self._process.stdout):
                pipe.close()
        self._process = None

    @property
    def worker_pid(self) -> int | None:
        """The worker process's id (None before the first check)."""
        return None if self._process is None else self._process.pid

    def close(self) -> None:
        with self._lock:
            self._stop()

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve() -> None:
    """The worker: answer JSON-line requests on stdin until it closes. Answers
    go to the original stdout; anything the library prints goes to stderr."""
    import resource

    logging.disable(logging.WARNING)  # math-verify warns that its timeouts are off
    cap = MEMORY_MB * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    _judge("check", "1", "1")  # imports and warms up the library
    answers.write(json.dumps(READY) + "\n")
    answers.flush()
    for line in sys.stdin:
        try:
            kind, gold, answer = json.loads(line)
            verdict = _judge(kind, gold, answer)
        except Exception:  # noqa: BLE001 - any failure of the library is a wrong answer
            verdict = "error"
        answers.write(json.dumps(verdict) + "\n")
        answers.flush()


def _judge(kind: str, gold: str, answer: str) -> str:
    from math_verify import verify

    parsed_gold = _parse(gold)
    if kind == "parses" or not parsed_gold:
        return "equal" if parsed_gold else "unparsable_gold"
    parsed = _parse(answer)
    if not parsed:
        return "unparsable_answer"
    equal = verify(parsed_gold, parsed, timeout_seconds=None)
    return "equal" if equal else "different"


def _parse(text: str) -> list:
    """What math-verify reads in ``text``; empty unless a value was read (a
    list holding only the raw string means nothing was understood). A bare
    answer (``2\\sqrt{2}``, no ``$`` or ``\\boxed``) is read as one formula
    first — as written, math-verify would take the first number it sees."""
    from math_verify import parse

    bare = "$" not in text and "\\boxed" not in text
    for candidate in (f"${text}$", text) if bare else (text,):
        parsed = parse(candidate, parsing_timeout=None) if candidate.strip("$ ") else []
        if any(not isinstance(p, str) for p in parsed):
            return parsed
    return []


if __name__ == "__main__":
    _serve()

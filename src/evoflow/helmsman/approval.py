"""The human in the loop: who approves a plan and answers the agents'
questions. ``auto`` approves every plan and answers nothing; ``terminal``
asks on stdin; ``file`` reads a JSON file a person writes next to a batch
job (``{"approve": true}``, ``{"feedback": "..."}``, ``{"answer": "..."}``),
so a cluster job never waits on a terminal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evoflow.errors import EvoflowError

MODES = ("auto", "terminal", "file")


class ApprovalPending(EvoflowError):
    """A batch run needs a person's decision before it can go on."""


class AutoApprover:
    """Approves every plan; has no answers (the agents go on without them)."""

    interactive = False

    def review(self, plan: str) -> tuple[bool, str]:
        return True, ""

    def answer(self, question: str) -> str | None:
        return None


class TerminalApprover:
    """Asks on the terminal."""

    interactive = True

    def review(self, plan: str) -> tuple[bool, str]:
        sys.stdout.write(f"{plan}\n\nApprove this plan? [y / your feedback]: ")
        sys.stdout.flush()
        reply = sys.stdin.readline().strip()
        return reply.lower() in ("y", "yes"), reply

    def answer(self, question: str) -> str | None:
        sys.stdout.write(f"{question}\nYour answer (empty to skip): ")
        sys.stdout.flush()
        return sys.stdin.readline().strip() or None


class FileApprover:
    """Reads decisions from ``path``; with no file there, stops with a message
    saying what to write."""

    interactive = True

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _read(self, what: str) -> dict:
        if not self.path.exists():
            raise ApprovalPending(f"{what}: write {self.path} and rerun "
                                  '({"approve": true}, {"feedback": "..."} or {"answer": "..."})')  # fmt: skip
        try:
            decision = json.loads(self.path.read_text())
        except ValueError as error:
            raise ApprovalPending(f"{self.path} is not valid JSON ({error})") from error
        if not isinstance(decision, dict):
            raise ApprovalPending(f"{self.path} must hold a JSON object")
        return decision

    def review(self, plan: str) -> tuple[bool, str]:
        decision = self._read("the plan waits for approval")
        return bool(decision.get("approve")), str(decision.get("feedback", ""))

    def answer(self, question: str) -> str | None:
        answer = self._read(f"the agents ask: {question}").get("answer")
        return str(answer) if answer else None


def make_approver(mode: str, path: Path | None = None):
    if mode == "auto":
        return AutoApprover()
    if mode == "terminal":
        return TerminalApprover()
    if mode == "file":
        if path is None:
            raise ValueError("approval mode 'file' needs a path")
        return FileApprover(path)
    raise ValueError(f"unknown approval mode {mode!r}; choose one of {MODES}")

"""The human in the loop: who approves a plan and answers the agents'
questions. ``auto`` approves every plan and answers nothing; ``terminal``
asks on stdin; ``file`` reads a JSON file a person writes next to a batch
job (``{"approve": true}``, ``{"feedback": "..."}``, ``{"answer": "..."}``),
so a cluster job never waits on a terminal: the job stops, the person reads
the draft it left and writes a decision, the rerun goes on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from evoflow.atomic import write_text
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
    """Reads decisions from ``path``, one per question or plan review. Each
    decision read is kept as ``<stem>.decision-<n>.json`` and the draft it
    answered as ``<stem>.draft-<n>.md``; a rerun replays kept decisions in
    order, so feedback is used once and the run goes on where it stopped.
    With no decision there, it stops with a message saying what to write."""

    interactive = True

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.count = 0

    def _kept(self, n: int, kind: str, extension: str) -> Path:
        return self.path.with_name(f"{self.path.stem}.{kind}-{n}{extension}")

    def _decide(self, what: str, draft: str) -> dict:
        self.count += 1
        kept = self._kept(self.count, "decision", ".json")
        if not kept.exists():
            shown = self._kept(self.count, "draft", ".md")
            write_text(shown, draft)
            if not self.path.exists():
                raise ApprovalPending(f"{what} (see {shown}): write {self.path} and rerun "
                                      '({"approve": true}, {"feedback": "..."} or '
                                      '{"answer": "..."})')  # fmt: skip
            os.replace(self.path, kept)
        try:
            decision = json.loads(kept.read_text())
        except ValueError as error:
            kept.unlink()
            raise ApprovalPending(
                f"{self.path} was not valid JSON ({error}); write it again"
            ) from error
        if not isinstance(decision, dict):
            kept.unlink()
            raise ApprovalPending(
                f"{self.path} must hold a JSON object; write it again"
            )
        return decision

    def review(self, plan: str) -> tuple[bool, str]:
        decision = self._decide("the plan waits for approval", plan)
        return bool(decision.get("approve")), str(decision.get("feedback", ""))

    def answer(self, question: str) -> str | None:
        answer = self._decide(f"the agents ask: {question}", question).get("answer")
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

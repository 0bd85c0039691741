"""Snakemake's terminal output read as events: the plan, job starts and ends.

Snakemake 9 prints, in its default format, a ``Job stats:`` table of the jobs it
will run, then per job either ``Job <id>: <message>`` (a rule with a
``message:``) or a ``rule <name>:`` block with ``jobid: <id>``, and on its end
``Finished jobid: <id> (Rule: <name>)`` and ``<done> of <total> steps (…) done``.
A failed job prints ``Error in rule <name>:`` with its ``jobid``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STATS = "Job stats:"
_STATS_ROW = re.compile(r"^(\w+)\s+(\d+)$")
_MESSAGE = re.compile(r"^Job (\d+): (.+)$")
_BLOCK = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
_STEPS = re.compile(r"^(\d+) of (\d+) steps \(.*\) done")
_ERROR = re.compile(r"^Error in rule (\w+):$")
# What the compact view leaves out: Snakemake's clock lines, its scheduler's
# chatter, and the lines a progress line replaces.
_CHATTER = re.compile(
    r"^(\[\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\]|Select jobs to execute\.\.\."
    r"|Execute \d+ jobs\.\.\.|Finished jobid: \d+ |\d+ of \d+ steps \(.*\) done|$)"
)


def is_chatter(line: str) -> bool:
    """Whether the compact view of Snakemake's output leaves ``line`` out."""
    return bool(_CHATTER.match(line.rstrip()))


@dataclass(frozen=True)
class Event:
    """One thing Snakemake reported.

    Attributes
    ----------
    kind
        ``plan`` (``counts``: jobs per rule still to run), ``start`` (``job``,
        ``text``: its message, or its rule's name), ``finish`` (``job``,
        ``rule``), ``steps`` (``done``, ``total``) or ``error`` (``job``,
        ``rule``).
    """

    kind: str
    job: int | None = None
    rule: str | None = None
    text: str = ""
    done: int = 0
    total: int = 0
    counts: tuple[tuple[str, int], ...] = ()


class EventReader:
    """Turns Snakemake's output, one line at a time, into events."""

    def __init__(self) -> None:
        self._table: list[tuple[str, int]] | None = None
        self._block: dict | None = None  # a rule block (or error) being read

    def feed(self, line: str) -> list[Event]:
        """The events that ``line`` completes (usually none or one).

        Parameters
        ----------
        line
            one line of Snakemake's output, without its line break.
        """
        text = line.rstrip()
        if self._table is not None:
            return self._table_row(text)
        events = self._block_line(text)
        if text == _STATS:
            self._table = []
        elif m := _MESSAGE.match(text):
            events.append(Event("start", job=int(m[1]), text=m[2]))
        elif m := _BLOCK.match(text):
            self._block = {"kind": "start", "rule": m[1]}
        elif m := _ERROR.match(text):
            self._block = {"kind": "error", "rule": m[1]}
        elif m := _FINISHED.match(text):
            events.append(Event("finish", job=int(m[1]), rule=m[2]))
        elif m := _STEPS.match(text):
            events.append(Event("steps", done=int(m[1]), total=int(m[2])))
        return events

    def _table_row(self, text: str) -> list[Event]:
        if not text or text.startswith("-") or text.split()[:2] == ["job", "count"]:
            if not text and self._table:
                return self._end_table()
            return []
        m = _STATS_ROW.match(text)
        if m is None:
            return self._end_table() + self.feed(text)
        if m[1] == "total":
            return self._end_table()
        self._table.append((m[1], int(m[2])))
        return []

    def _end_table(self) -> list[Event]:
        counts, self._table = tuple(self._table or ()), None
        return [Event("plan", counts=counts)]

    def _block_line(self, text: str) -> list[Event]:
        """A rule block's or error report's ``jobid`` line is its event."""
        block = self._block
        if block is None:
            return []
        if not text.startswith(" "):
            self._block = None
            return []
        m = _JOBID.match(text)
        if m is None:
            return []
        self._block = None
        kind, rule = block["kind"], block["rule"]
        return [Event(kind, job=int(m[1]), rule=rule, text=rule)]

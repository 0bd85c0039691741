"""A run's progress from Snakemake's output: jobs done, time spent, time left.

The estimate of what is left sums, over the jobs still to run, the mean job
time of their rule — from this run's finished jobs where a job of the rule has
finished, else from the benchmark files a previous run left under
``logs/<experiment>/bench`` — less the time the running jobs have already
spent, over the cores. Rules that neither has timed are counted apart.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from evoflow.errors import EvoflowError
from evoflow.monitor.events import Event

FREE_RULES = frozenset({"all"})  # targets that run nothing


def previous_means(bench: str | Path) -> dict[str, float]:
    """Mean job seconds per rule from a previous run's benchmark files (none: {})."""
    from evoflow.report.timing import rule_times

    try:
        rules = rule_times(bench)
    except EvoflowError:
        return {}
    return {name: r["seconds"] / r["jobs"] for name, r in rules.items() if r["jobs"]}


def duration(seconds: float) -> str:
    """``1h05m``, ``12m05s`` or ``40s``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


@dataclass
class Running:
    """A job that has started and not yet ended."""

    text: str
    started: float
    rule: str | None = None


@dataclass
class Progress:
    """What the run has done so far, updated event by event.

    Attributes
    ----------
    cores
        jobs that run at once (the estimate divides the job time left by it).
    prior
        mean job seconds per rule from a previous run (``previous_means``).
    started
        when the run started (``time.time()``).
    """

    cores: int
    prior: dict[str, float]
    started: float
    planned: Counter = field(default_factory=Counter)
    finished: Counter = field(default_factory=Counter)
    observed: dict[str, list[float]] = field(default_factory=dict)
    running: dict[int, Running] = field(default_factory=dict)
    ended: list[tuple[str, float]] = field(default_factory=list)
    done: int = 0
    total: int = 0

    def apply(self, event: Event, now: float) -> None:
        """Take one event into account (``now``: when it was read)."""
        if event.kind == "plan":
            self.planned = Counter(dict(event.counts)) + self.finished
            self.total = self.total or sum(self.planned.values())
        elif event.kind == "start":
            self.running[event.job] = Running(event.text, now, event.rule)
        elif event.kind in ("finish", "error"):
            job = self.running.pop(event.job, None)
            if event.kind == "finish":
                self.finished[event.rule] += 1
                if job is not None:
                    self.observed.setdefault(event.rule, []).append(now - job.started)
                    self.ended.append((job.text, now - job.started))
        elif event.kind == "steps":
            self.done, self.total = event.done, event.total

    def mean(self, rule: str) -> float | None:
        """Mean job seconds of ``rule``: this run's, else the previous run's."""
        if rule in FREE_RULES:
            return 0.0
        seen = self.observed.get(rule)
        return sum(seen) / len(seen) if seen else self.prior.get(rule)

    def left(self, now: float) -> tuple[float | None, Counter]:
        """Estimated wall seconds left (None: nothing timed) and the jobs per rule
        left out of it for want of a timing."""
        job_seconds, untimed = 0.0, Counter()
        for rule, count in self.planned.items():
            remaining = max(0, count - self.finished[rule])
            mean = self.mean(rule)
            if mean is None:
                untimed[rule] += remaining
            else:
                job_seconds += remaining * mean
        if not self.observed and not self.prior and untimed:
            return None, +untimed
        spent = sum(now - job.started for job in self.running.values())
        return max(0.0, job_seconds - spent) / max(1, self.cores), +untimed

    def take_ended(self) -> list[tuple[str, float]]:
        """The jobs that ended since the last call: (text, seconds) each."""
        ended, self.ended = self.ended, []
        return ended

    def line(self, now: float | None = None, prefix: str = "",
             ended: list[tuple[str, float]] = ()) -> str:  # fmt: skip
        """The one-line summary: jobs done (and the job that just ended), time
        spent, about how long is left, what is running.

        Parameters
        ----------
        now
            the time it is (default: the clock's).
        prefix
            words after the time, e.g. ``still running``.
        ended
            jobs that just ended, named after the count (``take_ended``).
        """
        now = time.time() if now is None else now
        clock = time.strftime("%H:%M:%S", time.localtime(now))
        head = f"[{clock}] {prefix + ', ' if prefix else ''}"
        head += f"{self.done}/{self.total} done"
        if ended:
            head += " - " + ", ".join(f"{text} ({duration(s)})" for text, s in ended)
        parts = [head, f"{duration(now - self.started)} elapsed"]
        left, untimed = self.left(now)
        if self.total and self.done >= self.total:
            pass
        elif left is None:
            parts[-1] += ", time left unknown until a job of each rule has ended"
        elif not untimed:
            parts[-1] += f", about {duration(left)} left"
        else:
            parts[-1] += untimed_text(left, untimed)
        if self.running:
            jobs = sorted(self.running.values(), key=lambda job: job.started)
            parts.append("running: " + ", ".join(
                f"{job.text} ({duration(now - job.started)})" for job in jobs))  # fmt: skip
        return " | ".join(parts)

    def state(self, now: float, finished: bool = False) -> dict:
        """What ``evoflow status`` reads (written to ``progress.json``)."""
        left, untimed = self.left(now)
        return {"updated": now, "started": self.started, "done": self.done,
                "total": self.total, "left_s": left, "untimed": dict(untimed),
                "running": [{"text": job.text, "started": job.started}
                            for job in self.running.values()],
                "finished": finished, "line": self.line(now)}  # fmt: skip


# Rules an untimed estimate names (the ones with most jobs left), at most.
NAMED_RULES = 3


def untimed_text(left: float, untimed: Counter) -> str:
    """What the line says while some rules have no timing yet: the timed part
    is only a floor, and the untimed jobs are named by rule (most first)."""
    jobs = sum(untimed.values())
    named = [f"{n} {rule}" for rule, n in untimed.most_common(NAMED_RULES)]
    if len(untimed) > NAMED_RULES:
        named.append("...")
    waiting = f"{jobs} job{'s' * (jobs > 1)} not yet timed: {', '.join(named)}"
    if left < 60:
        return f", time left unknown ({waiting})"
    return f", at least {duration(left)} left ({waiting})"

"""``evoflow progress``: pass Snakemake's output through and add a progress line.

After every finished job, and after ``heartbeat`` seconds without a line while
jobs run, one line says how many jobs are done, the time spent, about how long
is left and what is running (``evoflow.monitor.progress``). Each update also
lands in ``<logs>/progress.json`` for ``evoflow status``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from evoflow.atomic import write_json
from evoflow.monitor.events import EventReader, is_chatter
from evoflow.monitor.progress import Progress, previous_means

STATE_FILE = "progress.json"


def follow(lines: Iterable[str], out: TextIO, logs: str | Path, cores: int,
           heartbeat: float = 300.0, raw: bool = False,
           clock: Callable[[], float] = time.time) -> Progress:  # fmt: skip
    """Echo ``lines`` to ``out``, compacted, with progress lines among them.

    The compact view drops Snakemake's clock lines, its scheduler's chatter and
    its ``Finished``/``steps`` lines (the progress line says it), and prints
    each job's start with the time: ``[12:31:05] Job 14: explore …``.

    Parameters
    ----------
    lines
        Snakemake's output (stdout and stderr together), line by line.
    out
        where everything is written (flushed line by line).
    logs
        the experiment's log folder (``logs/<experiment>``): its ``bench/``
        files time the rules of a previous run, and ``progress.json`` is written
        there.
    cores
        jobs that run at once.
    heartbeat
        seconds without output, while jobs run, after which the progress line is
        repeated (``still running``).
    raw
        echo every line as it came (the progress lines are still added).
    clock
        the time source (tests pass their own).
    """
    logs = Path(logs)
    progress = Progress(cores, previous_means(logs / "bench"), clock())
    reader = EventReader()
    for line in _with_pauses(lines, heartbeat):
        now = clock()
        if line is None:
            if progress.running:
                _say(out, progress.line(now, prefix="still running"))
                _save(logs, progress, now)
            continue
        line = line.rstrip("\n")
        events = reader.feed(line)
        if raw or not is_chatter(line):
            starts = any(event.kind == "start" for event in events)
            _say(out, f"[{_clock(now)}] {line}" if starts and not raw else line)
        for event in events:
            progress.apply(event, now)
            if event.kind == "steps":
                _say(out, progress.line(now, ended=progress.take_ended()))
            _save(logs, progress, now)
    _save(logs, progress, clock(), finished=True)
    return progress


def _clock(now: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(now))


def _say(out: TextIO, text: str) -> None:
    out.write(f"{text}\n")
    out.flush()


def _save(logs: Path, progress: Progress, now: float, finished: bool = False) -> None:
    if logs.is_dir():  # the workflow creates it; before that there is nothing to say
        write_json(logs / STATE_FILE, progress.state(now, finished))


def _with_pauses(lines: Iterable[str], pause: float) -> Iterable[str | None]:
    """``lines``, with a None after every ``pause`` seconds that brought none."""
    inbox: queue.Queue = queue.Queue(maxsize=1000)
    end = object()

    def read() -> None:
        for line in lines:
            inbox.put(line)
        inbox.put(end)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            item = inbox.get(timeout=pause)
        except queue.Empty:
            yield None
            continue
        if item is end:
            return
        yield item

"""``evoflow status``: where a run is, read from its files by another terminal.

It prints the last progress line ``evoflow progress`` saved (``progress.json``),
and the job logs written to most recently, each with its last line — a job's
own tqdm bar or log record — so a long job shows how far it is.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from evoflow.errors import EvoflowError
from evoflow.monitor.follow import STATE_FILE
from evoflow.monitor.progress import duration


def last_line(path: Path, tail_bytes: int = 4096) -> str:
    """The last non-empty line of a log; tqdm's ``\\r`` updates count as lines."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - tail_bytes))
        text = handle.read().decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.replace("\r", "\n").split("\n")]
    return next((line for line in reversed(lines) if line), "")


def recent_logs(logs: Path, within: float, now: float) -> list[tuple[Path, float]]:
    """Job logs under ``logs`` (benchmark files aside) written in the last
    ``within`` seconds, newest first, with their age in seconds."""
    found = []
    for path in logs.rglob("*.log"):
        if "bench" in path.relative_to(logs).parts[:1]:
            continue
        age = now - path.stat().st_mtime
        if age <= within:
            found.append((path, age))
    return sorted(found, key=lambda item: item[1])


def status_text(logs: str | Path, within: float = 600.0, shown: int = 8,
                now: float | None = None) -> str:  # fmt: skip
    """What ``evoflow status`` prints for the log folder ``logs/<experiment>``.

    Raises
    ------
    EvoflowError
        when ``logs`` is not a folder.
    """
    logs, now = Path(logs), time.time() if now is None else now
    if not logs.is_dir():
        raise EvoflowError(f"log folder {logs}/ does not exist (is the experiment "
                           "named right? make run writes logs/embedded)")  # fmt: skip
    lines = [_progress(logs / STATE_FILE, now)]
    active = recent_logs(logs, within, now)
    if active:
        lines.append(f"job logs written in the last {duration(within)} (tail -f one "
                     "to follow it):")  # fmt: skip
        for path, age in active[:shown]:
            lines.append(f"  {path} ({duration(age)} ago): {last_line(path)[:160]}")
        if len(active) > shown:
            lines.append(f"  … and {len(active) - shown} more")
    else:
        lines.append(f"no job log under {logs}/ written in the last {duration(within)}")
    return "\n".join(lines) + "\n"


def _progress(state_file: Path, now: float) -> str:
    if not state_file.is_file():
        return (f"no {state_file} (it is written by `make run`, or by piping "
                "snakemake's output through `evoflow progress`)")  # fmt: skip
    try:
        state = json.loads(state_file.read_text())
        line, updated = state["line"], float(state["updated"])
    except (ValueError, KeyError, TypeError) as exc:
        raise EvoflowError(f"{state_file}: not a progress file ({exc})") from None
    if state.get("finished"):
        return f"run ended: {line}"
    return f"{line}\n(as of {duration(now - updated)} ago)"

"""Commands that follow a run: its progress while it runs, where it is, and
where its time went."""

from __future__ import annotations

import argparse
from pathlib import Path

from evoflow.cli.registry import command

# --- progress ----------------------------------------------------------------


def _progress_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", type=Path,
                   help="the experiment's log folder (logs/<experiment>): its "
                        "benchmark files time a previous run, progress.json goes "
                        "there")  # fmt: skip
    p.add_argument("--cores", type=int, default=2,
                   help="jobs that run at once (snakemake's --cores)")  # fmt: skip
    p.add_argument("--heartbeat", type=float, default=300.0,
                   help="seconds of silence, while jobs run, after which the "
                        "progress line is repeated")  # fmt: skip
    p.add_argument("--raw", action="store_true",
                   help="echo every line of snakemake's as it came (default: off - "
                        "leave out its clock lines and scheduler chatter)")  # fmt: skip


@command(
    "progress",
    "Pass snakemake's output through, adding a progress line per finished job: "
    "jobs done, time spent, about how long is left, what is running (make run "
    "pipes snakemake's output into it).",
    _progress_args,
    "evoflow progress logs/embedded --cores 2",
)
def _progress(args: argparse.Namespace) -> int:
    import signal
    import sys

    from evoflow.monitor.follow import follow

    # Ctrl-C stops snakemake; its last words still come through here until EOF
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    follow(sys.stdin, sys.stdout, args.logs, args.cores, args.heartbeat, args.raw)
    return 0


# --- status ------------------------------------------------------------------


def _status_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", type=Path,
                   help="the experiment's log folder (logs/<experiment>)")  # fmt: skip
    p.add_argument("--within", type=float, default=600.0,
                   help="seconds: job logs written this recently are shown")  # fmt: skip
    p.add_argument("--shown", type=int, default=8, help="job logs shown at most")


@command(
    "status",
    "Where a run is (from another terminal): its last progress line and the job "
    "logs written to lately, each with its last line (a job's tqdm bar).",
    _status_args,
    "evoflow status logs/embedded",
)
def _status(args: argparse.Namespace) -> int:
    from evoflow.monitor.status import status_text

    print(status_text(args.logs, args.within, args.shown), end="")
    return 0


# --- timing ------------------------------------------------------------------


def _timing_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", help="an experiment's log folder (logs/<experiment>)")


@command(
    "timing",
    "Sum a finished run's job times per rule (its benchmark files).",
    _timing_args,
    "evoflow timing logs/embedded",
)
def _timing(args: argparse.Namespace) -> int:
    from evoflow.report.timing import rule_times, timing_markdown

    print(timing_markdown(rule_times(Path(args.logs) / "bench")), end="")
    return 0

"""The evoflow command line: one subcommand per user-facing library entry point.

Handlers import their library modules lazily so that, for example, ``evoflow
query`` never pays for importing torch. The commands live by theme in
``data``, ``monitor``, ``serve``, ``run``, ``studies`` and ``docs``; ``registry`` holds their
one list.
"""

from __future__ import annotations

import argparse
import logging
import sys

from evoflow import __version__
from evoflow.cli import data, docs, monitor, run, serve, studies  # noqa: F401
from evoflow.cli.help import HelpFormatter
from evoflow.cli.registry import COMMANDS
from evoflow.errors import EvoflowError
from evoflow.joblog import DATE_FORMAT, LOG_FORMAT

DESCRIPTION = (
    "evoflow: self-evolving LLM agents as one Snakemake workflow. The workflow "
    "itself runs with snakemake (make run); these commands check configs, query "
    "and report a run's files, follow a run, and serve environments and models."
)
EPILOG = """examples:
  evoflow check-config --config config/config.yaml
  evoflow status logs/embedded
  evoflow query --stats
  evoflow COMMAND --help     (every command's options, defaults and an example)
"""


def make_parser() -> argparse.ArgumentParser:
    """The ``evoflow`` parser with one subparser per registered command."""
    parser = argparse.ArgumentParser(
        prog="evoflow",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"evoflow {__version__}",
                        help="print the version and exit")  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging")  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, cmd in COMMANDS.items():
        example = "\n".join(f"  {line}" for line in cmd.examples)
        # the listing %-formats a command's help; its own description is raw
        listed = cmd.help.replace("%", "%%")
        p = sub.add_parser(name, help=listed, description=cmd.help,
                           epilog=f"example{'s' * (len(cmd.examples) > 1)}:\n{example}\n",
                           formatter_class=HelpFormatter)  # fmt: skip
        cmd.arguments(p)
        p.set_defaults(handler=cmd.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``evoflow`` on ``argv`` (default: the process's arguments)."""
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format=LOG_FORMAT, datefmt=DATE_FORMAT)  # fmt: skip
    try:
        return args.handler(args)
    except EvoflowError as exc:
        print(f"evoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0

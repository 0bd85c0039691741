"""The ``evoflow`` command line: one subcommand per user-facing library entry point.

Handlers import their library modules lazily so that, for example, ``evoflow
query`` never pays for importing torch. The commands live by theme in
``data``, ``serve`` and ``run``; ``registry`` holds their one list.
"""

from __future__ import annotations

import argparse
import logging
import sys

from evoflow import __version__
from evoflow.cli import data, run, serve  # noqa: F401  (each registers its commands)
from evoflow.cli.registry import COMMANDS
from evoflow.errors import EvoflowError


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evoflow", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--version", action="version", version=f"evoflow {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, arguments, handler) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        arguments(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.handler(args)
    except EvoflowError as exc:
        print(f"evoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0

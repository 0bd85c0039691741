"""The one list of ``evoflow`` subcommands: name -> its help, arguments, handler
and an example command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

Handler = Callable[[argparse.Namespace], int]
Arguments = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes
    ----------
    help
        one sentence: what the command does (its ``--help`` description).
    arguments
        adds the command's arguments to its parser.
    handler
        runs the command; returns the exit status.
    examples
        command lines, each starting with ``evoflow <name>``, shown under
        ``--help`` and on the command-line reference page.
    """

    help: str
    arguments: Arguments
    handler: Handler
    examples: tuple[str, ...]


COMMANDS: dict[str, Command] = {}


def command(name: str, help_text: str, arguments: Arguments, *examples: str):
    """Register the decorated handler as ``evoflow <name>``.

    Raises
    ------
    ValueError
        when no example is given or one does not start with ``evoflow <name>``.
    """
    if not examples:
        raise ValueError(f"evoflow {name}: give at least one example command line")
    for example in examples:
        if not example.startswith(f"evoflow {name}"):
            raise ValueError(
                f"evoflow {name}: example {example!r} does not start with the command"
            )

    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(help_text, arguments, handler, examples)
        return handler

    return register

"""The one list of ``evoflow`` subcommands: name -> (help, arguments, handler)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

Handler = Callable[[argparse.Namespace], int]
Arguments = Callable[[argparse.ArgumentParser], None]
COMMANDS: dict[str, tuple[str, Arguments, Handler]] = {}


def command(name: str, help_text: str, arguments: Arguments):
    """Register ``handler`` as ``evoflow <name>``."""

    def register(handler: Handler) -> Handler:
        COMMANDS[name] = (help_text, arguments, handler)
        return handler

    return register

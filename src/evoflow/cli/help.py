"""How ``evoflow`` prints its help: every option with its default, examples kept
as written.

In descriptions and epilogs a line that starts with spaces (an example command)
is kept as written; other lines are wrapped to the terminal. An option's help
gets ``(default: ...)`` appended unless it already names its default in words
(a switch reads ``(default: off)``, a required option ``(required)``).
"""

from __future__ import annotations

import argparse
import textwrap


class HelpFormatter(argparse.HelpFormatter):
    """Wrapped prose, examples as written, each option's default after its help."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            if line.startswith(" ") or not line:
                lines.append(indent + line)
            else:
                lines += textwrap.wrap(line, width, initial_indent=indent,
                                       subsequent_indent=indent)  # fmt: skip
        return "\n".join(lines)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.required and action.option_strings:
            return text if "(required" in text else f"{text} (required)"
        if "(default" in text or action.default is argparse.SUPPRESS:
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text  # a required positional has no default
        return f"{text} (default: {default_text(action)})"


def default_text(action: argparse.Action) -> str:
    """An action's default as its help shows it (``%`` doubled for argparse)."""
    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    if isinstance(action, argparse._StoreFalseAction):
        return "on"
    if action.default is None or action.default == []:
        return "none"
    return str(action.default).replace("%", "%%")

"""``docs/reference/cli.md`` from the ``evoflow`` argparse parsers: every command
with its usage, arguments, defaults and examples."""

from __future__ import annotations

import argparse
import re

from evoflow.cli.help import default_text

INTRO = """\
Every command prints the same with `evoflow COMMAND --help`. The workflow itself
is driven by `snakemake` (`--profile workflow/profiles/local` or `--profile
slurm`, `--configfile`, `--config key=value`, `-n`); `make run` and `make test`
are the two entry points of a fresh clone.
"""
# Where the documentation says more about a command (pages relative to this one).
MORE = {
    "query": "[Trajectories](trajectories.md)",
    "check-config": "[Your first experiment](../tutorials/your-first-experiment.md)",
    "tracking": "[MLflow](../how-to/mlflow.md)",
    "import-agenttraj": "[AgentTraj](../how-to/agenttraj.md)",
    "export-agenttraj": "[AgentTraj](../how-to/agenttraj.md)",
    "make-splits": "[Environments](environments.md#splits)",
    "calibrate": "[the calibration notes](../notes/2026-11-23-calibration.md)",
    "seeds": "[Comparing seeds](../tutorials/comparing-seeds.md)",
    "progress": "[Your first run](../tutorials/first-run.md#watch-it)",
    "status": "[Your first run](../tutorials/first-run.md#watch-it)",
    "timing": "[Outputs](outputs.md#logs-and-timing)",
    "federate": "[Flower federation](../how-to/flower-federation.md)",
    "helmsman": "[Reproduce Helmsman](../how-to/reproduce-helmsman.md)",
    "serve-env": "[Remote environments](../how-to/remote-envs.md)",
    "serve-policy": "[GPU and vLLM](../how-to/gpu-vllm.md)",
    "explore-ui": "[Trajectories](trajectories.md#browse-the-trajectory-explorer)",
}
WIDTH = 88  # columns of the usage lines, whatever the terminal
_DEFAULT = re.compile(r"\s*\(default: ([^)]*)\)")


def cli_page() -> str:
    """The whole page, Markdown."""
    from evoflow.cli import make_parser
    from evoflow.cli.registry import COMMANDS

    parser = make_parser()
    commands = _subparsers(parser)
    lines = ["# Command line: `evoflow`", "",
             "<!-- Generated from the argparse parsers of src/evoflow/cli/ by "
             "`evoflow docs-reference`; do not edit by hand. -->", "", INTRO,
             "| Command | What it does | More |", "| --- | --- | --- |"]  # fmt: skip
    for name in commands:
        lines.append(f"| [`evoflow {name}`](#evoflow-{name}) | "
                     f"{_cell(COMMANDS[name].help)} | {MORE.get(name, '')} |")  # fmt: skip
    lines += ["", "## Global options", "", "```", _usage(parser), "```", "",
              *_arguments(parser)]  # fmt: skip
    for name, sub in commands.items():
        lines += _command(name, sub, COMMANDS[name].examples)
    return "\n".join(lines).rstrip("\n") + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise ValueError("evoflow's parser has no subcommands")


def _command(name: str, parser: argparse.ArgumentParser, examples) -> list[str]:
    lines = [f"## evoflow {name}", "", parser.description or "", "", "```",
             _usage(parser), "```", ""]  # fmt: skip
    lines += _arguments(parser)
    lines += [f"Example{'s' * (len(examples) > 1)}:", "", "```", *examples, "```", ""]
    return lines


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage line, wrapped here between argument groups (argparse would wrap
    it to the terminal's width)."""
    text = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines = [""]
    for group in re.findall(r"\[[^\]]*\]|\S+", text):
        if lines[-1] and len(lines[-1]) + 1 + len(group) > WIDTH:
            lines.append("   ")
        lines[-1] += f" {group}" if lines[-1] else group
    return "\n".join(lines)


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    """A table of the parser's arguments (``--help`` itself left out)."""
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        help_text = action.help or ""
        stated = _DEFAULT.search(help_text)  # a default the help states in words
        default = stated[1] if stated else _default(action)
        meaning = _DEFAULT.sub("", help_text)
        rows.append(f"| {_names(action)} | {_cell(default)} | {_cell(meaning)} |")
    if not rows:
        return []
    return ["| Argument | Default | Meaning |", "| --- | --- | --- |", *rows, ""]


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{option}`" for option in action.option_strings)
    if action.nargs != 0 and not action.choices:
        metavar = action.metavar or action.dest.upper()
        if isinstance(metavar, tuple):
            metavar = " ".join(metavar)
        names += f" `{metavar}`"
    if action.choices:
        names += " (" + " \\| ".join(f"`{c}`" for c in action.choices) + ")"
    return names


def _default(action: argparse.Action) -> str:
    if action.required or (
        not action.option_strings and action.nargs not in ("?", "*")
    ):
        return "required"
    if action.default is argparse.SUPPRESS:
        return "—"
    return default_text(action).replace("%%", "%")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")

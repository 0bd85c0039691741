"""The command that writes the generated reference pages of the documentation."""

from __future__ import annotations

import argparse

from evoflow.cli.registry import command
from evoflow.errors import EvoflowError


def _docs_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true",
                   help="write nothing; fail if a page differs from its source")  # fmt: skip


@command(
    "docs-reference",
    "Write docs/reference/config.md (from the config schema) and "
    "docs/reference/cli.md (from these commands' parsers).",
    _docs_args,
    "evoflow docs-reference --check",
)
def _docs_reference(args: argparse.Namespace) -> int:
    from evoflow.docsgen import PAGES, stale_pages, write_pages

    if args.check:
        stale = stale_pages()
        if stale:
            raise EvoflowError(f"out of date: {', '.join(stale)} (evoflow "
                               "docs-reference rewrites them)")  # fmt: skip
        print(f"up to date: {', '.join(PAGES)}")
        return 0
    changed = write_pages()
    print(f"rewrote: {', '.join(changed)}" if changed else "nothing to rewrite")
    return 0

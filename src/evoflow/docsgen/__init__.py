"""Reference pages generated from their sources: the config keys from the JSON
schema, the command line from its argparse parsers.

``evoflow docs-reference`` writes them; ``evoflow docs-reference --check`` (and
a test) fails when a committed page differs from what its source gives.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evoflow.provenance import REPO_ROOT


def _config() -> str:
    from evoflow.docsgen.config_page import config_page

    return config_page()


def _cli() -> str:
    from evoflow.docsgen.cli_page import cli_page

    return cli_page()


PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/config.md": _config,
    "docs/reference/cli.md": _cli,
}


def stale_pages(root: Path = REPO_ROOT) -> list[str]:
    """The generated pages whose committed text differs from their source's."""
    stale = []
    for relative, render in PAGES.items():
        path = root / relative
        if not path.is_file() or path.read_text() != render():
            stale.append(relative)
    return stale


def write_pages(root: Path = REPO_ROOT) -> list[str]:
    """Write every generated page; return those whose text changed."""
    from evoflow.atomic import write_text

    changed = stale_pages(root)
    for relative in changed:
        write_text(root / relative, PAGES[relative]())
    return changed

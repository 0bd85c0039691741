"""Where an artifact came from: code version and stable content hashes."""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from evoflow import __version__

REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def code_version() -> str:
    """Package version plus the git commit of the checkout, if there is one."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}" if sha else __version__


def stable_hash(value: Any) -> str:
    """sha256 of the canonical JSON form of ``value`` (key order does not matter)."""
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()

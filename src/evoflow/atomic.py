"""Atomic file writes: a hidden temp file in the target folder, then os.replace.

Readers therefore see a whole file or no file; a crash leaves only a hidden
``.<name>.tmp-…`` file that no glob over ``*.parquet`` / ``*.json`` matches.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path to write; on success it replaces ``path``, else vanishes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        yield tmp
        if tmp.is_file():
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        elif tmp.is_dir() and path.is_dir():  # a folder cannot replace a full folder
            old = path.with_name(
                f".{path.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
            )
            os.replace(path, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path: str | Path, payload: Any) -> Path:
    """Write ``payload`` as indented JSON, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(
            json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n"
        )
    return Path(path)

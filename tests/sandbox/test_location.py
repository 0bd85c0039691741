"""The sandbox starts wherever evoflow and its environment are installed, and
where it cannot start it names the step that failed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import evoflow
from evoflow.sandbox import SandboxUnavailable, isolation, run_python

# Run by the new environment's interpreter: a check split on the host, one
# that needs the judge, and a program importing a package installed there.
PROBE = """
import json
from evoflow.sandbox import run_python
from evoflow.verify import check_code
program = "def add(a, b):\\n    return a + b\\n"
host = check_code(program, ["assert add(2, 3) == 5", "assert add(2, 3) == 6"])
judge = check_code(program, ["assert add(len('ab'), 3) == 5"])
tiny = run_python("import tinypkg\\nprint(tinypkg.WORD)", packages=("tinypkg",))
print(json.dumps({"evoflow": __import__("evoflow").__file__,
                  "host": [host.passed, host.total], "judge": [judge.passed, judge.total],
                  "tiny": [tiny.status, tiny.stdout.strip(), tiny.stderr[-300:]]}))
"""


def make_environment(root: Path) -> Path:
    """A checkout (evoflow's source) and a virtual environment under ``root``,
    the environment seeing this one's packages and a package of its own; its
    interpreter."""
    checkout = root / "a checkout"
    shutil.copytree(Path(evoflow.__file__).parent, checkout / "src" / "evoflow",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    venv = checkout / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)],
                   check=True, timeout=120)  # fmt: skip
    site = next(venv.glob("lib/python3*/site-packages"))
    here = [p for p in sys.path if p.endswith("site-packages")]
    (site / "paths.pth").write_text("\n".join([str(checkout / "src"), *here]) + "\n")
    (site / "tinypkg").mkdir()
    (site / "tinypkg" / "__init__.py").write_text(
        "WORD = 'installed under the checkout'\n"
    )
    info = site / "tinypkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n"
    )
    (info / "RECORD").write_text(
        "tinypkg/__init__.py,,\ntinypkg-1.0.dist-info/METADATA,,\ntinypkg-1.0.dist-info/RECORD,,\n"
    )
    return venv / "bin" / "python"


@pytest.mark.parametrize("where", ["tmp", "home"])
def test_the_sandbox_runs_from_a_checkout_anywhere(where, tmp_path):
    # /tmp is the sandbox's own private /tmp inside; a path with spaces and
    # one under $HOME must work as well as the usual checkout.
    root = tmp_path if where == "tmp" else Path(tempfile.mkdtemp(dir=Path.home()))
    try:
        python = make_environment(root)
        done = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True,
                              timeout=300, cwd=root)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["evoflow"].startswith(str(root / "a checkout"))
        assert (result["host"], result["judge"]) == ([1, 2], [1, 1])
        assert result["tiny"][:2] == ["passed", "installed under the checkout"], result
    finally:
        if where == "home":
            shutil.rmtree(root, ignore_errors=True)


MOUNTS = isolation._interpreter_mounts


@pytest.fixture
def fresh_check():
    """The start-up probe runs again, and again after the test."""
    isolation.check.cache_clear()
    yield
    isolation.check.cache_clear()
    MOUNTS.cache_clear()


def test_an_interpreter_that_is_not_there_is_named(monkeypatch, fresh_check):
    monkeypatch.setattr(isolation, "_interpreter_mounts", lambda: ())
    with pytest.raises(SandboxUnavailable, match="interpreter could not be started"):
        run_python("pass")


def test_a_mount_that_fails_is_named(monkeypatch, fresh_check, tmp_path):
    missing = str(tmp_path / "no such folder")
    monkeypatch.setattr(isolation, "_interpreter_mounts",
                        lambda: ("--ro-bind", missing, isolation.INTERPRETER))  # fmt: skip
    with pytest.raises(
        SandboxUnavailable, match="could not build the sandbox's file system"
    ):
        run_python("pass")


def test_an_interpreter_without_its_library_is_named(monkeypatch, fresh_check):
    executable = MOUNTS()[:3]  # the executable alone
    monkeypatch.setattr(isolation, "_interpreter_mounts", lambda: executable)
    with pytest.raises(
        SandboxUnavailable, match="started inside the sandbox but failed"
    ):
        run_python("pass")


@pytest.mark.parametrize(
    ("stderr", "step"),
    [
        ("bwrap: No permissions to creating new namespace, likely because the kernel "
         "does not allow non-privileged user namespaces", "namespaces"),
        ("bwrap: setting up uid map: Permission denied", "namespaces"),
        ("bwrap: Can't bind mount /oldroot/x on /newroot/y: No such file", "file system"),
        ("bwrap: execvp /sandbox/python/bin/python3: No such file or directory",
         "interpreter could not be started"),
        ("Fatal Python error: init_fs_encoding", "started inside the sandbox but failed"),
    ],
)  # fmt: skip
def test_each_failing_step_has_its_own_words(stderr, step):
    assert step in isolation.diagnose(stderr)

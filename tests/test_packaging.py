"""The three places that pin the stack agree with each other."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NO_DEPS = ("dp-accounting",)  # pins attrs<24; runs on the lock's attrs


def _pins(lines):
    pins = {}
    for line in lines:
        name, _, version = line.partition("==")
        pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def _pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return _pins(project["dependencies"] + extras["gpu"] + extras["dev"])


def test_every_dependency_is_pinned_exactly():
    assert all(v for v in _pyproject().values()), "every dependency needs '=='"


def test_environment_yml_matches_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert _pins(pip) == _pyproject()
    assert "python=3.11" in env["dependencies"]


def test_cpu_lock_uses_the_cpu_torch_and_the_same_pins():
    lock = _pins(
        line
        for line in (ROOT / "requirements" / "cpu.lock").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert lock["torch"] == "2.13.0+cpu"
    makefile = (ROOT / "Makefile").read_text()
    for name, version in _pyproject().items():
        if name in ("torch", "vllm"):
            continue
        if name in NO_DEPS:  # its pins clash with the lock: the Makefile adds it alone
            assert f"--no-deps {name}=={version}" in makefile, name
            continue
        assert lock[name] == version, name

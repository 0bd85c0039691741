"""A Flower codebase as files: the module names every codebase has, our
baseline's modules, and the sandbox project a codebase runs as."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from evoflow.atomic import write_text

MODULES = ("task.py", "strategy.py", "client_app.py", "server_app.py", "run.py")
# What a codebase may import besides the standard library (with what these
# require): the sandbox shows it nothing else
PACKAGES = ("numpy", "flwr")
RUNTIME = "flower_runtime.py"
DATA = "data.npz"
CONFIG = "run_config.json"


STRATEGIES = (
    "fedavg",
    "fedprox",
    "fednova",
    "fedper",
    "heterofl",
    "fedlwf",
    "fedweit",
    "fedns",
)


def baseline(strategy: str = "fedavg") -> dict[str, str]:
    """Our baseline codebase with ``strategy`` as its ``strategy.py`` — the one
    module that differs between baselines (it holds both sides of the
    algorithm: the server's Flower strategy and the clients' local work)."""
    if strategy not in STRATEGIES:
        raise ValueError(
            f"unknown baseline strategy {strategy!r}; choose one of {STRATEGIES}"
        )
    folder = resources.files("evoflow.helmsman") / "baseline"
    modules = {
        name: (folder / name).read_text() for name in MODULES if name != "strategy.py"
    }
    modules["strategy.py"] = (folder / "strategies" / f"{strategy}.py").read_text()
    return modules


def project(
    modules: dict[str, str], data: bytes, config: dict
) -> dict[str, str | bytes]:
    """The sandbox project of a codebase: its modules, the in-process Flower
    runtime, the task's data and the run's settings; ``run.py`` is the program."""
    missing = [name for name in MODULES if name not in modules]
    if missing:
        raise ValueError(f"the codebase lacks {', '.join(missing)}")
    runtime = (resources.files("evoflow.helmsman") / "runtime.py").read_text()
    files: dict[str, str | bytes] = dict(modules)
    files.update({RUNTIME: runtime, DATA: data, CONFIG: json.dumps(config),
                  "program.py": modules["run.py"]})  # fmt: skip
    return files


def save(modules: dict[str, str], folder: Path) -> None:
    """Write a codebase's modules into ``folder`` (each file atomically)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in modules.items():
        write_text(folder / name, text)


def load(folder: Path) -> dict[str, str]:
    """The modules of a codebase saved by ``save``."""
    return {
        name: (folder / name).read_text()
        for name in MODULES
        if (folder / name).exists()
    }

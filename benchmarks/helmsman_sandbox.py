"""Helmsman's sandbox cost per attempt, against bare baselines in one run.

- start-up: ``run_files`` of an empty program (new network namespace, rlimits,
  audit hook, private folder, token) vs a bare ``subprocess.run`` of the same
  interpreter on the same empty program;
- Flower: the same, importing ``flwr``'s Message API (what every codebase
  pays before its first round);
- a whole baseline run (FedAvg on a task's substitute data, the benchmark's
  rounds) in the sandbox vs the same codebase run bare in a temporary folder.

    python benchmarks/helmsman_sandbox.py [--task Q4] [--rounds 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evoflow.helmsman import codebase, datafile, partitions
from evoflow.helmsman.bench import get_task
from evoflow.helmsman.benchmark import BenchSettings, run_config
from evoflow.sandbox import Limits, run_files

LIMITS = Limits(seconds=300, memory_mb=4096, output_kb=8192)
FLOWER = "from flwr.app import ArrayRecord\nfrom flwr.serverapp import ServerApp\n"


def timed(function, repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bare(files: dict[str, str | bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, content in files.items():
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(Path(folder) / name, mode) as handle:
                handle.write(content)
        done = subprocess.run(
            [sys.executable, "program.py"], cwd=folder, capture_output=True
        )
        if done.returncode:
            raise RuntimeError(done.stderr.decode()[-2000:])


def sandboxed(files: dict[str, str | bytes]) -> None:
    outcome, _ = run_files(files, LIMITS, packages=codebase.PACKAGES)
    if not outcome.ok:
        raise RuntimeError(f"{outcome.status}: {outcome.stderr[-2000:]}")


def baseline_files(task_id: str, rounds: int) -> dict[str, str | bytes]:
    task = get_task(task_id)
    data = partitions.build(task, 0)
    with tempfile.TemporaryDirectory() as folder:
        datafile.save(data, Path(folder) / "data.npz")
        raw = (Path(folder) / "data.npz").read_bytes()
    meta = {**data.meta, "num_clients": len(data.clients)}
    config = run_config(task, meta, BenchSettings(rounds=rounds), 0, "fedavg")
    return codebase.project(codebase.baseline("fedavg"), raw, config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="Q4")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cases = {
        "empty program": {"program.py": "pass\n"},
        "import flwr": {"program.py": FLOWER},
        f"FedAvg on {args.task}, {args.rounds} rounds": baseline_files(
            args.task, args.rounds
        ),
    }
    print(
        f"{'case':32} {'bare s':>8} {'sandbox s':>10} {'overhead s':>11} {'ratio':>6}"
    )
    for name, files in cases.items():
        plain, boxed = timed(lambda f=files: bare(f), args.repeat), timed(
            lambda f=files: sandboxed(f), args.repeat)  # fmt: skip
        print(
            f"{name:32} {plain:8.3f} {boxed:10.3f} {boxed - plain:11.3f} {boxed / plain:6.2f}"
        )
    print(json.dumps({"python": sys.version.split()[0], "repeat": args.repeat}))


if __name__ == "__main__":
    main()

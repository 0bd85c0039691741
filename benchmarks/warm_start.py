"""Warm job start (``evoflow.warmstart``) against cold start, in one run.

A Snakemake job is a new Python process. Two measures, alternating cold and
warm on the same machine:

- a job: the wall time of ``python job.py`` for a script that imports what a
  train and an evaluation job import, loads the tiny model and exits — cold in
  its own interpreter, warm handed to a server that already imported them (the
  server's own start is paid once a run and is not counted);
- ``--dag``: the wall time of a whole tiny workflow (tests/configs/tiny.yaml:
  every Fed-SE method, 2 envs, 2 rounds, ~30 jobs) on ``--cores 2``, cold
  (``EVOFLOW_WARMSTART=0``) and warm (the default), from a fresh folder each.

It prints the medians and the ratio warm / cold.

    python benchmarks/warm_start.py [--reps 5] [--dag]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evoflow import warmstart

ROOT = Path(__file__).resolve().parents[1]
JOB = """\
from evoflow.warmstart import handoff
handoff()
from evoflow.train.run import train_from_manifest
from evoflow.evaluate.run import run_evaluation
from evoflow.policy.hf import HFPolicy
from evoflow.train.sft_trainer import SFTConfig, load_lora_model
load_lora_model("tiny-random-llama", SFTConfig(), None)
"""


def job_seconds(script: Path, address: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if k != warmstart.SOCKET_VAR}
    if address:
        env[warmstart.SOCKET_VAR] = address
    start = time.perf_counter()
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    return time.perf_counter() - start


def dag_seconds(warm: bool) -> float:
    env = {**os.environ, warmstart.SWITCH_VAR: "1" if warm else "0"}
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
                   "--directory", folder, "--configfile", str(ROOT / "tests/configs/tiny.yaml"),
                   "--cores", "2", "--quiet", "all"]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, timeout=1800, capture_output=True)
        return time.perf_counter() - start


def report(name: str, times: dict[str, list[float]]) -> None:
    cold, warm = (statistics.median(times[k]) for k in ("cold", "warm"))
    for key, value in (("cold", cold), ("warm", warm)):
        print(f"{name}: {key} median {value:.2f} s over {len(times[key])} runs")
    print(f"{name}: ratio warm / cold {warm / cold:.2f} ({cold - warm:.2f} s less)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument(
        "--dag", action="store_true", help="also time the tiny workflow"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "job.py"
        script.write_text(JOB)
        process, address = warmstart.start(folder, preload=warmstart.PRELOAD)
        if process is None:
            sys.exit("the warm server did not come up")
        try:
            job_seconds(script, None)  # the page cache, both ways
            job_seconds(script, address)
            times: dict[str, list[float]] = {"cold": [], "warm": []}
            for _ in range(args.reps):
                times["cold"].append(job_seconds(script, None))
                times["warm"].append(job_seconds(script, address))
        finally:
            warmstart.stop(process, address)
    report("job", times)
    if args.dag:
        dags: dict[str, list[float]] = {"cold": [], "warm": []}
        for _ in range(max(1, args.reps // 2)):
            dags["cold"].append(dag_seconds(False))
            dags["warm"].append(dag_seconds(True))
        report("tiny DAG", dags)


if __name__ == "__main__":
    main()

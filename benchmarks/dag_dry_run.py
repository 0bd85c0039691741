"""`snakemake -n` over the full paper sweep, and a no-op rerun, timed.

The sweep is every paper config (five models) with every method kind — the five
Table 1 methods, the three ablations and Fed-SE at ranks 2, 4 and 16 — over 20
rounds and 5 clients. Each model is one experiment (one Snakemake invocation).
For the no-op rerun every output of the sweep is created as an empty
placeholder and marked up to date (``--touch``), then the dry run must find
nothing to do. Baseline: one dry run of the embedded default, the
per-invocation floor. Prints job counts, times and the ratios.

    python benchmarks/dag_dry_run.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXTRA_METHODS = {
    "fedse_no_history": {},
    "fedse_no_filter": {},
    "fedse_weighted": {},
    "fedse_r2": {"kind": "fedse", "train": {"lora_r": 2, "lora_alpha": 4}},
    "fedse_r4": {"kind": "fedse", "train": {"lora_r": 4, "lora_alpha": 8}},
    "fedse_r16": {"kind": "fedse", "train": {"lora_r": 16, "lora_alpha": 32}},
}


def dry_run(config: Path, workdir: Path) -> tuple[int, float]:
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(workdir), "--configfile", str(config), "--cores", "1"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    match = re.search(r"^total\s+(\d+)", run.stdout, re.MULTILINE)
    return (int(match.group(1)) if match else 0), seconds


def fake_finished_run(config: Path, workdir: Path) -> None:
    """Create every output of ``config`` as a placeholder and mark it up to date."""
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "--summary", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(workdir), "--configfile", str(config), "--cores", "1"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    for line in run.stdout.splitlines()[1:]:
        name = line.split("\t", 1)[0].strip()
        if not name or " " in name:
            continue
        path = workdir / name
        if path.name == "adapter":
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--touch", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(workdir), "--configfile", str(config), "--cores", "1"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        configs = []
        for path in sorted((ROOT / "config" / "paper").glob("fedse_*.yaml")):
            config = yaml.safe_load(path.read_text())
            config["methods"] = {**config["methods"], **EXTRA_METHODS}
            target = tmp / path.name
            target.write_text(yaml.safe_dump(config))
            configs.append(target)
        jobs = seconds = 0.0
        for config in configs:
            n, s = dry_run(config, tmp)
            jobs, seconds = jobs + n, seconds + s
            print(f"{config.stem}: {n} jobs, dry run {s:.1f} s")
        print(
            f"paper sweep: {int(jobs)} jobs, dry run {seconds:.1f} s (goal < 60 s: {seconds / 60:.2f} of budget)"
        )
        again = 0.0
        for config in configs:
            fake_finished_run(config, tmp)
            n, s = dry_run(config, tmp)
            if n:
                raise SystemExit(f"{config.stem}: a no-op rerun planned {n} jobs")
            again += s
        print(f"no-op rerun of the finished sweep: {again:.1f} s (goal < 60 s)")
        n, base = dry_run(ROOT / "config" / "config.yaml", tmp)
        print(f"baseline, embedded default: {n} jobs, {base:.1f} s per invocation "
              f"(sweep = {seconds / base:.1f}x one small dry run)")  # fmt: skip


if __name__ == "__main__":
    main()

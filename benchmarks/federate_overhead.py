"""Wall time per round: one federated method as a Flower deployment
(``evoflow federate``: SuperLink, a SuperNode per client, `flwr run`) vs the
in-process Snakemake simulation of the same config, in one run on this machine.

Both paths run the same explore → buffer → train jobs and server step; the
deployment adds Flower's processes, the adapter's trip over HTTP both ways and a
fresh ``ClientApp`` process per message. Rounds from 2 on are compared (round 1
also plays the expert demonstrations); a round of the simulation is the time
between two rounds' comm.json, of the deployment the server's own timing (send
to aggregated). The deployment's start-up (processes, app install) is printed
apart. Snakemake runs with ``--cores`` jobs at a time; the deployment runs every
client at once. It also checks that both paths end at the same global adapter.

    python benchmarks/federate_overhead.py [--config config/fed_options.yaml]
        [--method fedse] [--cores 2] [--workdir DIR]
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

import torch
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evoflow.config import load_config  # noqa: E402
from evoflow.federate.launch import federate  # noqa: E402


def simulate(config: Path, method: str, rounds: int, results: str, workdir: Path,
             cores: int) -> tuple[float, list[float]]:  # fmt: skip
    """(total seconds, seconds of each round from 2 on) of the Snakemake run."""
    target = f"{results}/{method}/round={rounds}/global/adapter"
    started = time.time()
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
         "--directory", str(workdir), "--configfile", str(config), "--cores", str(cores),
         "--quiet", "rules", "--", target],
        capture_output=True, text=True,
    )  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"the simulation failed:\n{run.stderr[-3000:]}")
    total = time.time() - started
    ends = [(workdir / f"{results}/{method}/round={r}/global/comm.json").stat().st_mtime
            for r in range(1, rounds + 1)]  # fmt: skip
    return total, [b - a for a, b in zip(ends, ends[1:], strict=False)]


def same_adapters(a: Path, b: Path) -> float:
    """Largest element-wise difference of two adapter folders."""
    x, y = (load_file(p / "adapter_model.safetensors") for p in (a, b))
    return max(float((x[k] - y[k]).abs().max()) for k in x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "config" / "fed_options.yaml"))
    parser.add_argument("--method", default="fedse")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    config = load_config(args.config)
    rounds = config["methods"][args.method].get("rounds") or config["fed"]["rounds"]
    if rounds < 2:
        raise SystemExit("needs a method with at least 2 rounds")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="federate-bench-"))
    results = f"results/{config['experiment']}"
    sim_total, sim_rounds = simulate(Path(args.config), args.method, rounds, results,
                                     work / "simulation", args.cores)  # fmt: skip
    started = time.time()
    summary = federate(args.config, args.method, work / "flower", timeout=7200)
    fl_total = time.time() - started
    fl_rounds = [r["seconds"] for r in summary["rounds"][1:]]
    leaf = f"{results}/{args.method}/round={rounds}/global/adapter"
    diff = same_adapters(work / "simulation" / leaf, work / "flower" / leaf)
    sim_round, fl_round = statistics.median(sim_rounds), statistics.median(fl_rounds)
    overhead = fl_total - sum(r["seconds"] for r in summary["rounds"])
    print(
        f"config {args.config}, method {args.method}, {len(config['envs'])} clients, "
        f"{rounds} rounds, torch {torch.__version__}, snakemake --cores {args.cores}"
    )
    print(
        f"simulation: {sim_total:.1f} s in all; rounds >= 2: "
        f"{', '.join(f'{s:.1f}' for s in sim_rounds)} s (median {sim_round:.1f} s)"
    )
    print(
        f"flower:     {fl_total:.1f} s in all ({overhead:.1f} s start-up and stop); rounds >= 2: "
        f"{', '.join(f'{s:.1f}' for s in fl_rounds)} s (median {fl_round:.1f} s)"
    )
    print(f"ratio flower / simulation per round: {fl_round / sim_round:.2f}")
    print(f"final global adapters differ by at most {diff:.3g}")
    print(json.dumps({"simulation_round_s": sim_round, "flower_round_s": fl_round,
                      "ratio": fl_round / sim_round, "max_abs_diff": diff}))  # fmt: skip


if __name__ == "__main__":
    main()

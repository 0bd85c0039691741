"""Start-up of a model job: the imports of a train or evaluation job, in a fresh
interpreter, with ``evoflow.policy.lean_import`` against without it.

A Snakemake job is a new Python process; with the tiny test model almost all of
its time is start-up, and with the embedded model it is paid once per job (a
``make run`` has dozens). Alternating A B A B, each repetition runs a new
interpreter that imports what ``scripts/train.py`` and ``scripts/evaluate.py``
import, plus the model classes they load (transformers' ``AutoModelForCausalLM``
and peft):

- ours: in the jobs' order (evoflow's modules first, so ``lean_import`` runs
  before transformers' models and scikit-learn and SciPy are never imported);
- baseline: the same imports with transformers' models and peft first (what
  every job paid before ``lean_import``).

It prints the medians, the ratio and whether each run imported scikit-learn.

    python benchmarks/job_startup.py [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

JOB = (
    "from evoflow.train.run import train_from_manifest\n"
    "from evoflow.evaluate.run import run_evaluation\n"
    "from evoflow.policy.hf import HFPolicy\n"
)
MODELS = "from transformers import AutoModelForCausalLM\nimport peft\n"
TIMED = (
    "import sys, time\nt = time.perf_counter()\n{body}"
    "print(time.perf_counter() - t, 'sklearn' in sys.modules)\n"
)
VARIANTS = {"ours": JOB + MODELS, "baseline": MODELS + JOB}


def once(body: str) -> tuple[float, bool]:
    code = TIMED.format(body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True, timeout=300).stdout.split()  # fmt: skip
    return float(out[0]), out[1] == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    once(JOB + MODELS)  # warm the page cache and the bytecode files
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    sklearn: dict[str, bool] = {}
    for _ in range(args.reps):
        for name, body in VARIANTS.items():
            seconds, imported = once(body)
            times[name].append(seconds)
            sklearn[name] = imported
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:9s} median {medians[name]:.2f} s over {len(values)} fresh "
              f"interpreters (scikit-learn imported: {sklearn[name]})")  # fmt: skip
    print(f"ratio ours / baseline: {medians['ours'] / medians['baseline']:.2f} "
          f"({medians['baseline'] - medians['ours']:.2f} s less per model job)")  # fmt: skip


if __name__ == "__main__":
    main()

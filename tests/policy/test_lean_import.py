"""A model job never imports scikit-learn or SciPy through transformers.

Both are installed (Helmsman's data) and transformers imports them whenever they
are, which cost every train and evaluation job ~2.4 s of start-up
(``benchmarks/job_startup.py``). The check runs a fresh interpreter, as a
Snakemake job is, importing what the job scripts import and then loading a model
class and peft.
"""

from __future__ import annotations

import subprocess
import sys

JOB_IMPORTS = (
    "import sys\n"
    "from evoflow.train.run import train_from_manifest\n"
    "from evoflow.train.rl.run import run_rl_span\n"
    "from evoflow.evaluate.run import run_evaluation\n"
    "from transformers import AutoModelForCausalLM\n"
    "import peft\n"
    "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'scipy'}))\n"
)


def test_model_jobs_import_neither_sklearn_nor_scipy():
    run = subprocess.run([sys.executable, "-c", JOB_IMPORTS], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]", run.stdout


def test_without_the_lean_import_transformers_would_import_sklearn():
    # The baseline the first test guards against: transformers' models first.
    code = JOB_IMPORTS.replace("import sys\n", "import sys\nimport peft\n", 1)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "sklearn" in run.stdout, run.stdout

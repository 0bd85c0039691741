"""A baseline's runs of a task in the sandbox, one per seed
(evoflow.helmsman.run.run_baseline)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.helmsman.benchmark import BenchSettings
from evoflow.helmsman.run import run_baseline
from evoflow.joblog import log_to

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
run_baseline(
    snakemake.wildcards.task,
    snakemake.wildcards.strategy,
    BenchSettings.from_config(snakemake.params.bench),
    [Path(p) for p in snakemake.input.data],
    [Path(p) for p in snakemake.output],
)

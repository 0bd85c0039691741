"""The agents' final codebase on the benchmark's settings, one run per seed
(evoflow.helmsman.run.final_run)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.helmsman.benchmark import BenchSettings
from evoflow.helmsman.run import final_run
from evoflow.joblog import log_to

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
status = Path(snakemake.input.status)
final_run(
    snakemake.wildcards.task,
    status.parent,
    status,
    BenchSettings.from_config(snakemake.params.bench),
    [Path(p) for p in snakemake.input.data],
    [Path(p) for p in snakemake.output],
)

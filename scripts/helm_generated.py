"""The agents' final codebase on the benchmark's settings, one run per seed
(evoflow.helmsman.run.final_run)."""

from evoflow.warmstart import handoff

handoff()

import logging
import sys
from pathlib import Path

from evoflow.helmsman.benchmark import BenchSettings
from evoflow.helmsman.run import final_run

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
status = Path(snakemake.input.status)
final_run(
    snakemake.wildcards.task,
    status.parent,
    status,
    BenchSettings.from_config(snakemake.params.bench),
    [Path(p) for p in snakemake.input.data],
    [Path(p) for p in snakemake.output],
)

"""SAGE's seed pool, held-out and validation problems (evoflow.sage.run.prepare)."""

from evoflow.warmstart import handoff

handoff()

import logging
import sys

from evoflow.sage.run import prepare

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
prepare(
    snakemake.params.settings,
    snakemake.output.pool,
    snakemake.output.problems,
    snakemake.output.validation,
)

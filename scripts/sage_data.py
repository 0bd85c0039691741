"""SAGE's seed pool, held-out and validation problems (evoflow.sage.run.prepare)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.joblog import log_to
from evoflow.sage.run import prepare

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
prepare(
    snakemake.params.settings,
    snakemake.output.pool,
    snakemake.output.problems,
    snakemake.output.validation,
)

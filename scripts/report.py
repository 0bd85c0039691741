"""Regenerate the experiment's tables and figures from cached metrics."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.joblog import log_to
from evoflow.report.build import build_report

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
build_report(
    snakemake.params.config, snakemake.params.results, dict(snakemake.output.items())
)

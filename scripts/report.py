"""Regenerate the experiment's tables and figures from cached metrics."""

from evoflow.warmstart import handoff

handoff()

import logging
import sys

from evoflow.report.build import build_report

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
build_report(
    snakemake.params.config, snakemake.params.results, dict(snakemake.output.items())
)

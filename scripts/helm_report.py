"""Helmsman's tables (evoflow.report.helmsman.write_report)."""

from evoflow.warmstart import handoff

handoff()

import logging
import sys

from evoflow.report.helmsman import write_report

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
write_report(
    snakemake.params.folder,
    snakemake.params.settings,
    {"tables": snakemake.output.tables, "csv": snakemake.output.csv},
)

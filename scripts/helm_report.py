"""Helmsman's tables (evoflow.report.helmsman.write_report)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.joblog import log_to
from evoflow.report.helmsman import write_report

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
write_report(
    snakemake.params.folder,
    snakemake.params.settings,
    {
        "tables": snakemake.output.tables,
        "csv": snakemake.output.csv,
        "comparisons": snakemake.output.comparisons,
    },
)

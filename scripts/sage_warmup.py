"""SFT on the SAGE roles' tags over the seed set (evoflow.sage.run.warm_up)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.joblog import log_to
from evoflow.sage.run import warm_up
from evoflow.tracking import record, training

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
summary = warm_up(snakemake.params.settings, snakemake.input.pool, snakemake.output.adapter,
        threads=snakemake.threads)  # fmt: skip
# shared by every SAGE method: logged as its own method, round 0
record(snakemake.config, "sage_warmup", 0, "train warm-up", summary["config"],
       *training(summary))  # fmt: skip

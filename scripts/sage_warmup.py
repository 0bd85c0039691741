"""SFT on the SAGE roles' tags over the seed set (evoflow.sage.run.warm_up)."""

import logging
import sys

from evoflow.sage.run import warm_up

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
warm_up(snakemake.params.settings, snakemake.input.pool, snakemake.output.adapter,
        threads=snakemake.threads)  # fmt: skip

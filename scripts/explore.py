"""A client explores its own environment with the current global adapter."""

import logging
import sys

from evoflow.config import config_hash
from evoflow.rollout.explore import explore

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
adapter = snakemake.input.get("adapter")
explore(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    env_name=snakemake.wildcards.env,
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    adapter=str(adapter) if adapter else None,
    output=snakemake.output[0],
    threads=snakemake.threads,
)

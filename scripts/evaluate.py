"""Evaluate one (method, round) greedily on one environment's test tasks."""

import logging
import sys

from evoflow.evaluate.run import run_evaluation

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
adapter = snakemake.input.get("adapter")
run_evaluation(
    snakemake.params.settings,
    snakemake.params.config_hash,
    env_name=snakemake.wildcards.env,
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    adapter=str(adapter) if adapter else None,
    episodes_path=snakemake.output.episodes,
    metrics_path=snakemake.output.metrics,
    threads=snakemake.threads,
)

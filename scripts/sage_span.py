"""One span of SAGE steps (evoflow.sage.run.run_span)."""

import logging
import sys
from pathlib import Path

from evoflow.config import config_hash
from evoflow.sage.run import run_span

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
inputs = {"pools": list(snakemake.input.pools)}
if "state" in snakemake.input.keys():
    inputs["previous"] = str(Path(snakemake.input.state).parent)
if "init" in snakemake.input.keys():
    inputs["init"] = str(snakemake.input.init)
run_span(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    inputs=inputs,
    output=Path(snakemake.output.state).parent,
    threads=snakemake.threads,
)

"""One span of SAGE steps (evoflow.sage.run.run_span)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.config import config_hash
from evoflow.joblog import log_to
from evoflow.sage.run import run_span
from evoflow.tracking import record, step_series

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
inputs = {"pools": list(snakemake.input.pools)}
if "state" in snakemake.input.keys():
    inputs["previous"] = str(Path(snakemake.input.state).parent)
if "init" in snakemake.input.keys():
    inputs["init"] = str(snakemake.input.init)
metrics = run_span(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    inputs=inputs,
    output=Path(snakemake.output.state).parent,
    threads=snakemake.threads,
)
record(snakemake.config, snakemake.wildcards.method, int(snakemake.wildcards.round),
       "sage span", metrics["config"], metrics["span"], step_series(metrics["steps"]))  # fmt: skip

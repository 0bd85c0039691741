"""One span of RL training steps (evoflow.train.rl.run): a method's span, or
one federated client's span of a round (the client's env only)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.config import config_hash
from evoflow.joblog import log_to
from evoflow.tracking import record, step_series
from evoflow.train.rl.run import run_rl_span

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
inputs = {}
if "state" in snakemake.input.keys():
    inputs["previous"] = str(Path(snakemake.input.state).parent)
for key in (
    "init",
    "start",
):  # the first span's start; a federated client's round start
    if key in snakemake.input.keys():
        inputs["init"] = str(snakemake.input[key])
metrics = run_rl_span(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    inputs=inputs,
    output=Path(snakemake.output.state).parent,
    threads=snakemake.threads,
)
client = snakemake.wildcards.get("env")
job = f"rl span {client}" if client else "rl span"
record(snakemake.config, snakemake.wildcards.method, int(snakemake.wildcards.round),
       job, metrics["config"], metrics["span"], step_series(metrics["steps"]))  # fmt: skip

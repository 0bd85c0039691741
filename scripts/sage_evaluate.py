"""The Solver's pass@1 on SAGE's held-out problems (evoflow.sage.run.evaluate)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.config import config_hash
from evoflow.joblog import log_to
from evoflow.sage.run import evaluate
from evoflow.tracking import record

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
adapter = str(snakemake.input.adapter) if "adapter" in snakemake.input.keys() else None
metrics = evaluate(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    adapter=adapter,
    eval_file=snakemake.input.problems,
    output={"episodes": snakemake.output.episodes, "metrics": snakemake.output.metrics},
    threads=snakemake.threads,
)
record(snakemake.config, snakemake.wildcards.method, int(snakemake.wildcards.round),
       "evaluate", {"adapter": adapter}, metrics)  # fmt: skip

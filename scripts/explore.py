"""The clients of a round explore their own environments with the adapter the
round starts from (all in one batch)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.config import config_hash
from evoflow.joblog import log_to
from evoflow.rollout.explore import explore_envs

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
adapter = snakemake.input.get("adapter")
explore_envs(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    adapter=str(adapter) if adapter else None,
    outputs=dict(zip(snakemake.params.envs, snakemake.output, strict=True)),
    threads=snakemake.threads,
)

"""Evaluate one (method, round) greedily on every environment's test tasks."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.config import config_hash
from evoflow.evaluate.run import run_evaluation
from evoflow.joblog import log_to
from evoflow.tracking import record

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
envs = snakemake.params.envs
if "global" in snakemake.input.keys():
    adapters = {env: str(snakemake.input["global"]) for env in envs}
else:
    adapters = {
        env: str(snakemake.input[env]) if env in snakemake.input.keys() else None
        for env in envs
    }
metrics = run_evaluation(
    snakemake.params.settings,
    config_hash(snakemake.params.settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    adapters=adapters,
    outputs={
        env: (e, m)
        for env, e, m in zip(
            envs, snakemake.output.episodes, snakemake.output.metrics, strict=True
        )
    },
    threads=snakemake.threads,
    random_actions=snakemake.params.kind == "random",
    samples=snakemake.params.samples,
)
record(snakemake.config, snakemake.wildcards.method, int(snakemake.wildcards.round),
       "evaluate", {"envs": ",".join(envs), "adapters": adapters}, metrics)  # fmt: skip

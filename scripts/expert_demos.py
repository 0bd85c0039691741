"""Play, verify and store the expert demonstrations of one environment."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.config import config_hash
from evoflow.joblog import log_to
from evoflow.rollout.expert import write_demos

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
env = snakemake.params.env
info = write_demos(
    snakemake.output[0],
    env_name=snakemake.wildcards.env,
    n_tasks=env["demos"],
    experiment=snakemake.params.experiment,
    seed=snakemake.params.seed,
    config_hash=config_hash(
        dict(env, experiment=snakemake.params.experiment, seed=snakemake.params.seed)
    ),
    max_turns=env["max_turns"],
    demos_file=env["demos_file"],
    strata=env["strata"],
)
print(f"{info.rows} demonstrations -> {info.path}", file=sys.stderr)

"""The agents' planning phase for one task (evoflow.helmsman.run.plan)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.helmsman.bench import get_task
from evoflow.helmsman.run import plan
from evoflow.joblog import log_to
from evoflow.runtime import policy_from_config

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
config = snakemake.params.config
plan(
    get_task(snakemake.wildcards.task).query,
    policy_from_config(config),
    config["helmsman"]["agents"],
    Path(snakemake.params.calls),
    Path(snakemake.output[0]),
    Path(snakemake.params.approval),
)

"""The agents' coding phase for one task (evoflow.helmsman.run.code)."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.helmsman.run import code
from evoflow.joblog import log_to
from evoflow.runtime import policy_from_config

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
config = snakemake.params.config
code(
    Path(snakemake.input.plan),
    policy_from_config(config),
    config["helmsman"]["agents"],
    Path(snakemake.params.calls),
    Path(snakemake.output[0]),
)

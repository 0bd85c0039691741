"""The agents' simulate / diagnose / repair loop for one task
(evoflow.helmsman.run.refine_task); resumes at the last attempt written."""

from evoflow.warmstart import handoff

handoff()

import sys
from pathlib import Path

from evoflow.helmsman.benchmark import BenchSettings
from evoflow.helmsman.run import refine_task
from evoflow.joblog import log_to
from evoflow.runtime import policy_from_config

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
config = snakemake.params.config
refine_task(
    snakemake.wildcards.task,
    Path(snakemake.input.plan),
    Path(snakemake.input.code),
    Path(snakemake.input.data),
    policy_from_config(config),
    config["helmsman"]["agents"],
    BenchSettings.from_config(config["helmsman"]["bench"]),
    Path(snakemake.params.calls),
    Path(snakemake.output.status).parent,
)

"""pass@k of one (method, round) over k samples per test task."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.config import config_hash
from evoflow.evaluate.scaling import run_passk
from evoflow.joblog import log_to

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
settings = snakemake.params.settings
adapter = snakemake.input.get("global")
run_passk(
    settings,
    config_hash(settings),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
    adapter=str(adapter) if adapter else None,
    samples=snakemake.params.samples,
    outputs=dict(
        zip(
            settings["envs"],
            zip(snakemake.output.episodes, snakemake.output.metrics, strict=True),
            strict=True,
        )
    ),
    threads=snakemake.threads,
)

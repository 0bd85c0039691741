"""Record the resolved config (defaults filled) and its hash beside the results."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.atomic import write_json

sys.stderr = open(snakemake.log[0], "w")
write_json(
    snakemake.output[0],
    {
        "config": dict(snakemake.params.config),
        "config_hash": snakemake.params.config_hash,
    },
)

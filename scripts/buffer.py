"""The round's experience buffer: a manifest over earlier shards, never a copy."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.store.manifest import build_buffer

sys.stderr = open(snakemake.log[0], "w")
previous = snakemake.input.get("previous")
build_buffer(
    snakemake.output[0],
    seed_manifest=snakemake.input.seed,
    explored=snakemake.input.explored,
    select=snakemake.params.select,
    previous=str(previous) if previous else None,
    info={
        "method": snakemake.wildcards.method,
        "round": int(snakemake.wildcards.round),
        "client": snakemake.wildcards.env,
    },
)

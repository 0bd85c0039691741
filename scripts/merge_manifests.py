"""One dataset from several manifests (their shard lists joined, nothing copied)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.store.manifest import merge_manifests

sys.stderr = open(snakemake.log[0], "w")
merge_manifests(
    snakemake.output[0],
    list(snakemake.input),
    method=snakemake.wildcards.method,
    round=int(snakemake.wildcards.round),
)

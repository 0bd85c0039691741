"""Write a manifest listing whole shards (no episode is copied)."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.store.manifest import write_shards_manifest

sys.stderr = open(snakemake.log[0], "w")
write_shards_manifest(snakemake.output[0], list(snakemake.input), rule=snakemake.rule)

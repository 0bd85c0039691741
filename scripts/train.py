"""LoRA SFT of one adapter on the episodes of a buffer manifest."""

import logging
import sys

from evoflow.train.run import train_from_manifest

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
init = snakemake.input.get("init")
train_from_manifest(
    snakemake.input.manifest,
    model=snakemake.params.model,
    output=snakemake.output[0],
    sft=snakemake.params.sft,
    init_adapter=str(init) if init else None,
    loss_log=snakemake.params.loss_log,
    threads=snakemake.threads,
)

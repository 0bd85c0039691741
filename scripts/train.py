"""LoRA SFT of one adapter on the episodes of a buffer manifest."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.joblog import log_to
from evoflow.tracking import record, training
from evoflow.train.run import planned_steps, train_from_manifest

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
init, budget = snakemake.input.get("init"), snakemake.input.get("budget")
# a matched-budget job: the steps of the job it matches, from that job's
# manifest and settings (counted, not waited for)
steps = (
    planned_steps(budget, snakemake.params.model, snakemake.params.budget_sft)
    if budget
    else None
)
summary = train_from_manifest(
    snakemake.input.manifest,
    model=snakemake.params.model,
    output=snakemake.output[0],
    sft=snakemake.params.sft,
    init_adapter=str(init) if init else None,
    loss_log=snakemake.params.loss_log,
    threads=snakemake.threads,
    budget=steps,
    budget_from=str(budget) if budget else None,
)
who = snakemake.wildcards.get("env", "pooled")
record(snakemake.config, snakemake.wildcards.method, int(snakemake.wildcards.round),
       f"train {who}", snakemake.params.sft, *training(summary))  # fmt: skip

"""Average the round's client adapters into the global adapter; account bytes."""

from evoflow.warmstart import handoff

handoff()

import sys

from evoflow.fed.server_round import server_round
from evoflow.fed.settings import AggregationSettings
from evoflow.joblog import log_to
from evoflow.tracking import record

sys.stderr = open(snakemake.log[0], "w")
log_to(sys.stderr)
previous = snakemake.input.get("previous_comm")
found = snakemake.input.get("reference")  # last round's global adapter, where needed
reference = found if isinstance(found, str) else (list(found)[0] if found else None)
comm = server_round(
    list(snakemake.input.clients),
    output=snakemake.output.adapter,
    comm_path=snakemake.output.comm,
    strategy=snakemake.params.strategy,
    server=AggregationSettings(**snakemake.params.server),
    round=int(snakemake.wildcards.round),
    seed=int(snakemake.params.seed),
    model=snakemake.params.model,
    sft=snakemake.params.sft,
    reference=reference,
    previous_comm=str(previous) if previous else None,
)
record(snakemake.config, snakemake.wildcards.method, int(snakemake.wildcards.round),
       "aggregate", {"strategy": snakemake.params.strategy, **snakemake.params.server},
       comm)  # fmt: skip

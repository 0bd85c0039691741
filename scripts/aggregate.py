"""Average the round's client adapters into the global adapter; account bytes."""

import logging
import sys

from evoflow.fed.aggregate import aggregate_adapters, client_weights
from evoflow.fed.settings import AggregationSettings

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
clients = list(snakemake.input.clients)
previous = snakemake.input.get("previous_comm")
server = AggregationSettings(**snakemake.params.server)
found = snakemake.input.get("reference")  # last round's global adapter, where needed
reference = found if isinstance(found, str) else (list(found)[0] if found else None)
if (
    server.needs_reference and reference is None
):  # round 1: the fresh LoRA all clients began from
    from evoflow.train.sft_config import SFTConfig
    from evoflow.train.sft_trainer import initial_adapter

    reference = initial_adapter(
        snakemake.params.model, SFTConfig(**snakemake.params.sft)
    )
weighted = snakemake.params.strategy == "weighted"
aggregate_adapters(
    clients,
    output=snakemake.output.adapter,
    comm_path=snakemake.output.comm,
    strategy=snakemake.params.strategy,
    weights=client_weights(clients) if weighted else None,
    round=int(snakemake.wildcards.round),
    previous_comm=str(previous) if previous else None,
    settings=server,
    reference=reference,
    seed=int(snakemake.params.seed),
)

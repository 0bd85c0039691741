"""Average the round's client adapters into the global adapter; account bytes."""

import logging
import sys

from evoflow.fed.aggregate import aggregate_adapters, client_weights

sys.stderr = open(snakemake.log[0], "w")
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
clients = list(snakemake.input.clients)
previous = snakemake.input.get("previous_comm")
weighted = snakemake.params.strategy == "weighted"
aggregate_adapters(
    clients,
    output=snakemake.output.adapter,
    comm_path=snakemake.output.comm,
    strategy=snakemake.params.strategy,
    weights=client_weights(clients) if weighted else None,
    round=int(snakemake.wildcards.round),
    previous_comm=str(previous) if previous else None,
)

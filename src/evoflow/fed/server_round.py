"""One round's server step as every runner calls it (the workflow's aggregate
job, the Flower ServerApp): weights, the adapter the clients started from, the
average and comm.json."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evoflow.fed.aggregate import aggregate_adapters, client_weights
from evoflow.fed.settings import AggregationSettings


def server_round(clients: Sequence[str | Path], output: str | Path, comm_path: str | Path,
                 strategy: str, server: AggregationSettings, round: int, seed: int | None,
                 model: str, sft: dict, reference: str | None = None,
                 previous_comm: str | None = None, federation: list[str] | None = None,
                 lost: dict[str, str] | None = None) -> dict:  # fmt: skip
    """Aggregate ``clients`` (adapter folders) into ``output``; ``reference`` is
    last round's global adapter where the step needs it (round 1: the fresh LoRA
    every client began from is rebuilt from ``model`` and ``sft``). A live
    federation names all its clients (``federation``) and those ``lost`` this
    round, and passes ``seed`` None (sample and DP noise from the OS)."""
    start = reference
    if server.needs_reference and start is None:
        from evoflow.train.sft_config import SFTConfig
        from evoflow.train.sft_trainer import initial_adapter

        start = initial_adapter(model, SFTConfig(**sft))
    weighted = strategy == "weighted"
    return aggregate_adapters(
        list(clients),
        output=output,
        comm_path=comm_path,
        strategy=strategy,
        weights=client_weights(clients) if weighted else None,
        round=round,
        previous_comm=previous_comm,
        settings=server,
        reference=start,
        seed=seed,
        clients=federation,
        lost=lost,
    )

"""The server step: K client adapters in, one global adapter and comm.json out."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from evoflow.atomic import write_json
from evoflow.fed.adapters import check_compatible, load_adapter, save_adapter
from evoflow.fed.comm import round_traffic, with_cumulative
from evoflow.fed.strategies import STRATEGIES

log = logging.getLogger(__name__)


def client_weights(
    client_folders: Sequence[str | Path], key: str = "buffer_explored_successes"
) -> list[float]:
    """Per-client weights reported in each adapter's ``training.json``.

    The default is the number of successful episodes the client's own
    exploration put in its buffer (expert demonstrations not counted): the
    Fed-SE "w/ Weighted Avg" ablation. A client reports a count, not data.
    """
    weights = []
    for folder in client_folders:
        path = Path(folder) / "training.json"
        try:
            weights.append(float(json.loads(path.read_text())[key]))
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(
                f"{path}: no usable {key!r} for weighted aggregation ({exc})"
            ) from None
    return weights


def aggregate_adapters(
    client_folders: Sequence[str | Path],
    output: str | Path,
    comm_path: str | Path,
    strategy: str = "mean",
    weights: Sequence[float] | None = None,
    round: int = 0,
    previous_comm: str | Path | None = None,
) -> dict:
    """Aggregate adapter folders into ``output`` and account for the traffic.

    Parameters
    ----------
    client_folders
        one PEFT adapter folder per client, all of the same rank/targets/base.
    strategy
        ``mean`` (unweighted) or ``weighted`` (needs ``weights``). When every
        weight is 0 the weighted strategy falls back to the unweighted mean;
        comm.json records ``applied: mean`` and the reason under ``fallback``.
    previous_comm
        last round's comm.json, for cumulative totals.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not one of {sorted(STRATEGIES)}")
    adapters = [load_adapter(f) for f in client_folders]
    check_compatible(adapters)
    applied, fallback = strategy, None
    if strategy == "weighted" and weights is not None and not any(weights):
        applied = "mean"
        fallback = "every client's weight is 0: unweighted mean used instead"
        log.warning("aggregate: round %d: %s", round, fallback)
    merged = STRATEGIES[applied]().aggregate([a.tensors for a in adapters], weights)
    save_adapter(output, adapters[0].config, merged)
    previous = json.loads(Path(previous_comm).read_text()) if previous_comm else None
    record = with_cumulative(
        round_traffic(adapters[0].parameters, len(adapters)), previous
    )
    record.update(
        round=round,
        strategy=strategy,
        applied=applied,
        fallback=fallback,
        weights=list(weights) if weights is not None else None,
        client_folders=[str(f) for f in client_folders],
        rank=adapters[0].config.get("r"),
    )
    write_json(comm_path, record)
    log.info("aggregate: round %d, %d clients, %d params each (%.2f MiB fp32)", round,
             len(adapters), adapters[0].parameters, record["per_client"]["up_mib"]["fp32"])  # fmt: skip
    return record

"""Which client adapters a round's average takes: those sampled for the
round, that finished before the straggler deadline, whose adapter fits the
global one (same rank, targets, base model, shapes), holds only finite
numbers and, when ``max_norm_ratio`` is set, whose update is not an outlier
(norm over that multiple of the round's median). The others are named in
comm.json with the reason, and the round goes on without them."""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Sequence
from pathlib import Path

import torch

from evoflow.fed.adapters import (
    MUST_MATCH,
    Adapter,
    AdapterMismatch,
    check_compatible,
    load_adapter,
)
from evoflow.fed.participation import on_time, sample_clients
from evoflow.fed.privacy import update_norm
from evoflow.fed.settings import AggregationSettings

log = logging.getLogger(__name__)


def client_name(folder: str | Path) -> str:
    """``.../client=<env>/adapter`` -> ``<env>`` (else the folder's name)."""
    parent = Path(folder).parent.name
    return (
        parent.split("=", 1)[1] if parent.startswith("client=") else Path(folder).name
    )


def training_seconds(folder: str | Path) -> float:
    """How long the client's training took (its ``training.json``; 0 if unknown)."""
    try:
        return float(
            json.loads((Path(folder) / "training.json").read_text())["seconds"]
        )
    except (OSError, KeyError, ValueError):
        return 0.0


def admit(folders: Sequence[str | Path], settings: AggregationSettings, round: int,
          seed: int | None, start: Adapter | None,
          clients: Sequence[str] | None = None) -> tuple[list[int], list[Adapter], dict]:  # fmt: skip
    """(indices of the admitted clients, their adapters, what comm.json says).
    ``clients`` is the whole federation in order (default: the folders'
    clients), which the round's sample is drawn from even when some of them
    sent nothing."""
    names = [client_name(f) for f in folders]
    everyone = list(clients) if clients is not None else names
    sampled = set(sample_clients(everyone, settings.participation, seed, round))
    seconds = {
        n: training_seconds(f)
        for n, f in zip(names, folders, strict=True)
        if n in sampled
    }
    timely, late = on_time(seconds, settings.deadline_s)
    admitted = [i for i, n in enumerate(names) if n in timely]
    loaded = {i: load_adapter(folders[i]) for i in admitted}
    against = start or _majority([loaded[i] for i in admitted])
    refused, taken = {}, []
    for index in admitted:
        try:
            if against is not None:
                check_compatible([against, loaded[index]])
        except AdapterMismatch as exc:
            refused[names[index]] = str(exc)
            log.error(
                "aggregate: round %d: client %s refused: %s", round, names[index], exc
            )
            continue
        taken.append(index)
    for index, reason in _poisoned(taken, loaded, start, settings).items():
        refused[names[index]] = reason
        log.error(
            "aggregate: round %d: client %s refused: %s", round, names[index], reason
        )
        taken.remove(index)
    adapters = [loaded[i] for i in taken]
    for name in late:
        log.warning("aggregate: round %d: client %s missed the %.0f s deadline (%.1f s)",
                    round, name, settings.deadline_s, seconds[name])  # fmt: skip
    if not adapters:
        raise ValueError(f"round {round}: no client adapter left to average "
                         f"(refused: {sorted(refused)}, late: {late})")  # fmt: skip
    record = {
        "participants": [names[i] for i in taken],
        "not_sampled": [n for n in everyone if n not in sampled],
        "stragglers": {n: seconds[n] for n in late},
        "refused": refused,
    }
    return taken, adapters, record


def _poisoned(indices: list[int], loaded: dict, start: Adapter | None,
              settings: AggregationSettings) -> dict[int, str]:  # fmt: skip
    """Clients whose adapter holds NaN or Inf, or (with ``max_norm_ratio``)
    whose update — adapter minus ``start``, or the adapter itself without
    one — is more than that multiple of the median norm of the finite ones."""
    refused, norms = {}, {}
    for index in indices:
        tensors = loaded[index].tensors
        bad = [k for k, t in tensors.items() if not torch.isfinite(t).all()]
        if bad:
            refused[index] = f"non-finite values in {len(bad)} tensors (e.g. {bad[0]})"
        else:
            norms[index] = _update_norm(tensors, start)
    if settings.max_norm_ratio is None or not norms:
        return refused
    median = statistics.median(norms.values())
    for index, norm in norms.items():
        if norm > settings.max_norm_ratio * median:
            refused[index] = (f"update norm {norm:.4g} is over max_norm_ratio "
                              f"{settings.max_norm_ratio:g} × the median {median:.4g}")  # fmt: skip
    return refused


def _update_norm(tensors: dict, start: Adapter | None) -> float:
    if start is None:
        return update_norm(tensors)
    return update_norm({k: t.to(torch.float64) - start.tensors[k].to(torch.float64)
                        if k in start.tensors else t for k, t in tensors.items()})  # fmt: skip


def _majority(adapters: list[Adapter]) -> Adapter | None:
    """The first adapter of the most common (rank, alpha, targets, base) kind:
    without a global adapter to compare with, the odd ones out are refused."""
    if not adapters:
        return None

    def kind(adapter: Adapter) -> str:
        fields = {f: adapter.config.get(f) for f in MUST_MATCH}
        fields["target_modules"] = sorted(fields["target_modules"] or [])
        return json.dumps(fields, sort_keys=True, default=str)

    kinds = [kind(a) for a in adapters]
    common = max(kinds, key=kinds.count)  # ties: the first client's kind
    return adapters[kinds.index(common)]

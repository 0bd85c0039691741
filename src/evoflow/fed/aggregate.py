"""The server step: K client adapters in, one global adapter and comm.json out."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Sequence
from pathlib import Path

import torch

from evoflow.atomic import write_json
from evoflow.fed.adapters import VELOCITY, Adapter, load_adapter, save_adapter
from evoflow.fed.admission import admit
from evoflow.fed.comm import over_the_wire, round_traffic, with_cumulative
from evoflow.fed.exact import exact_mean
from evoflow.fed.privacy import epsilon, private_mean
from evoflow.fed.server_opt import momentum_step
from evoflow.fed.settings import AggregationSettings
from evoflow.fed.strategies import STRATEGIES, State

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
    settings: AggregationSettings | None = None,
    reference: str | Path | State | None = None,
    seed: int | None = 0,
    clients: Sequence[str] | None = None,
    lost: dict[str, str] | None = None,
) -> dict:
    """Aggregate adapter folders into ``output`` and account for the traffic.

    Parameters
    ----------
    client_folders
        one PEFT adapter folder per client; a client whose adapter does not
        match (rank, targets, base model, tensor shapes) is refused, logged and
        left out, and the round goes on with the others.
    strategy
        ``mean`` (unweighted) or ``weighted`` (needs ``weights``). When every
        weight is 0 the weighted strategy falls back to the unweighted mean;
        comm.json records ``applied: mean`` and the reason under ``fallback``.
    previous_comm
        last round's comm.json, for cumulative totals.
    settings
        the rest of the server step (``AggregationSettings``): naive or exact
        rule, uplink dtype, sampling, straggler deadline, DP, server momentum.
    reference
        the adapter the clients started from (a folder or tensors): DP clips
        updates against it and server momentum steps from it.
    seed
        seeds the round's participant sample and DP's noise (the simulation);
        None draws both from the OS, which nobody holding the config can redo
        (a deployment).
    clients, lost
        a live federation's clients in order, and those it never heard back
        from this round (name -> reason): the round's sample is drawn from all
        of them, and they all count in the federation's size.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r} is not one of {sorted(STRATEGIES)}")
    settings = settings or AggregationSettings()
    start = load_adapter(reference) if isinstance(reference, (str, Path)) else None
    base = start.tensors if start else reference
    if settings.dp_clip is not None and (strategy == "weighted" or round < 1):
        raise ValueError("DP averages the clients unweighted from round 1 on "
                         f"(strategy {strategy!r}, round {round})")  # fmt: skip
    if settings.needs_reference and base is None:
        raise ValueError(
            "DP and server momentum need the adapter the clients started from"
        )
    taken, adapters, record = admit(
        client_folders, settings, round, seed, start, clients
    )
    record["lost"] = dict(lost or {})
    weights = [weights[i] for i in taken] if weights is not None else None
    applied, fallback = strategy, None
    if strategy == "weighted" and weights is not None and not any(weights):
        applied = "mean"
        fallback = "every client's weight is 0: unweighted mean used instead"
        log.warning("aggregate: round %d: %s", round, fallback)
    states = [over_the_wire(a.tensors, settings.uplink) for a in adapters]
    population = len(clients) if clients is not None else len(client_folders)
    federation = (population, population - len(record["not_sampled"]))
    merged, extra = combine(states, weights if applied == "weighted" else None,
                            settings, base, seed, round, federation)  # fmt: skip
    velocity_in = _velocity(start) if round > 1 else None  # round 1: no velocity yet
    if settings.server_momentum > 0 or settings.server_lr != 1:
        merged, velocity = momentum_step(base, merged, velocity_in, settings.server_momentum,
                                         settings.server_lr)  # fmt: skip
        extra[VELOCITY] = velocity
    save_adapter(output, adapters[0].config, merged, extra.pop(VELOCITY, None))
    previous = json.loads(Path(previous_comm).read_text()) if previous_comm else None
    traffic = round_traffic(adapters[0].parameters, len(adapters), settings.uplink)
    record = {**with_cumulative(traffic, previous), **record, **extra}
    record.update(
        round=round, strategy=strategy, applied=applied, fallback=fallback,
        weights=list(weights) if weights is not None else None,
        client_folders=[str(client_folders[i]) for i in taken], rank=adapters[0].config.get("r"),
        aggregation=settings.to_dict(),
    )  # fmt: skip
    write_json(comm_path, record)
    log.info("aggregate: round %d, %d clients, %d params each (%.2f MiB %s up)", round,
             len(adapters), adapters[0].parameters,
             record["per_client"]["up_mib"][settings.uplink], settings.uplink)  # fmt: skip
    return record


def combine(states: list[State], weights, settings: AggregationSettings, base: State | None,
            seed: int | None, round: int, federation: tuple[int, int]) -> tuple[State, dict]:  # fmt: skip
    """The clients' average by the configured rule, with DP if asked, and
    what comm.json reports of it (errors of naive vs exact, or DP's ε, for
    ``federation`` = (K clients, m sampled per round))."""
    if settings.dp_clip is not None:
        return _private(states, settings, base, seed, round, federation)
    exact, errors = exact_mean(states, weights)
    extra = {"reconstruction_error": errors}
    if settings.rule == "exact":
        return exact, extra
    return STRATEGIES["weighted" if weights is not None else "mean"]().aggregate(
        states, weights
    ), extra


def _private(states: list[State], settings: AggregationSettings, base: State,
             seed: int | None, round: int, federation: tuple[int, int]) -> tuple[State, dict]:  # fmt: skip
    """DP-FedAvg's step. Nothing per client reaches comm.json (no norms, no
    reconstruction errors); the divisor is the m clients sampled per round;
    the round's participants are published, so ε takes no subsampling
    discount (q = 1). ``seed`` None draws the noise from the OS."""
    updates = [{k: s[k].to(torch.float64) - base[k].to(torch.float64) for k in s}
               for s in states]  # fmt: skip
    noise = torch.Generator().manual_seed(
        secrets.randbits(63) if seed is None else seed * 1_000_003 + round
    )
    mean_update = private_mean(updates, settings.dp_clip, settings.dp_noise, noise,
                               divisor=federation[1])  # fmt: skip
    merged = {k: (base[k].to(torch.float64) + v).to(states[0][k].dtype)
              for k, v in mean_update.items()}  # fmt: skip
    clients = federation[0]
    dp = {"epsilon": epsilon(settings.dp_noise, round, clients, clients, settings.dp_delta),
          "delta": settings.dp_delta, "divisor": federation[1],
          "noise": "os randomness" if seed is None else "simulation, seeded"}  # fmt: skip
    return merged, {"dp": dp}


def _velocity(start: Adapter | None) -> State | None:
    """Server momentum's velocity, kept in the previous global adapter's folder."""
    path = start.folder / VELOCITY if start else None
    if path is None or not path.is_file():
        return None
    from safetensors.torch import load_file

    return load_file(path)

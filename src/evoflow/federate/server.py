"""The Flower ``ServerApp`` of a federated method: it finds one SuperNode per
configured client, then each round sends the global adapter to the round's
clients, writes what comes back as adapter folders and runs the same server
step as the workflow (``fed.server_round``), so ``global/adapter`` and
``comm.json`` are the simulation's files. Every received message is logged to
the round's ``wire.jsonl`` (record types, keys, bytes, counts).

A client that errs or does not answer within ``round-timeout`` is *lost*: the
round goes on with the others when ``allow-partial`` is set (comm.json names
it under ``lost``), else the federation stops with an error naming it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.serverapp import Grid, ServerApp

from evoflow.atomic import write_json
from evoflow.config import validate_config
from evoflow.fed.adapters import load_adapter
from evoflow.fed.server_round import server_round
from evoflow.fed.settings import AggregationSettings
from evoflow.federate import wire
from evoflow.methods import Layout, family, methods_from_config

log = logging.getLogger(__name__)
app = ServerApp()
SUMMARY = (
    "federation.json"  # beside the method's rounds: status, errors, time per round
)


class FederationError(RuntimeError):
    """The federation cannot go on (a client lost without partial participation, ...)."""


@dataclass(frozen=True)
class Plan:
    config: dict
    method: str
    results: str  # the server's results folder of the experiment
    allow_partial: bool = False
    round_timeout: float = 3600.0
    join_timeout: float = 120.0

    @classmethod
    def from_run_config(cls, run_config) -> Plan:
        config = validate_config(
            json.loads(str(run_config["config"])), source="run config"
        )
        return cls(config, str(run_config["method"]), str(run_config["results"]),
                   bool(run_config.get("allow-partial", False)),
                   float(run_config.get("round-timeout", 3600.0)),
                   float(run_config.get("join-timeout", 120.0)))  # fmt: skip


@app.main()
def main(grid: Grid, context: Context) -> None:
    plan = Plan.from_run_config(context.run_config)
    summary_path = Path(plan.results) / plan.method / SUMMARY
    summary: dict = {"method": plan.method, "status": "running", "rounds": []}
    write_json(summary_path, summary)
    try:
        serve(grid, plan, summary, lambda: write_json(summary_path, summary))
        summary["status"] = "done"
    except Exception as exc:  # for the launcher; re-raised for Flower's log
        summary.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if summary["status"] == "running":  # stopped by something no handler sees
            summary.update(status="failed", error="the ServerApp was interrupted")
        write_json(summary_path, summary)


def serve(grid: Grid, plan: Plan, summary: dict, save=lambda: None) -> None:
    """Every round of ``plan.method``; ``summary`` collects per-round wall
    times (``save`` writes it after each round)."""
    method = methods_from_config(plan.config)[plan.method]
    if not method.kind.federated:
        raise FederationError(
            f"method {plan.method!r} ({method.kind.name}) is not federated"
        )
    clients = list(plan.config["envs"])
    nodes = identify(grid, clients, plan.join_timeout)
    summary["nodes"] = {c: str(n) for c, n in nodes.items()}
    layout, asked = Layout(plan.results), set(nodes.values())
    for round in range(1, method.rounds + 1):
        started = time.perf_counter()
        if round > 1:
            nodes = readmit(grid, nodes, plan.join_timeout, asked)
            summary["nodes"] = {c: str(n) for c, n in nodes.items()}
        record = run_round(grid, plan, method, layout, nodes, round)
        seconds = round_seconds(started)
        summary["rounds"].append({"round": round, "seconds": seconds,
                                  "participants": record["participants"],
                                  "lost": sorted(record["lost"])})  # fmt: skip
        log.info("federation: round %d done in %.1f s", round, seconds)
        save()


def round_seconds(started: float) -> float:
    return float(f"{time.perf_counter() - started:.3f}")


def identify(grid: Grid, clients: list[str], timeout: float) -> dict[str, int]:
    """Wait for the SuperNodes and ask each which client it is: {client: node id}."""
    deadline, nodes = time.monotonic() + timeout, []
    while len(nodes) < len(clients) and time.monotonic() < deadline:
        time.sleep(0.5)
        nodes = list(grid.get_node_ids())
    if len(nodes) < len(clients):
        raise FederationError(f"{len(nodes)} of {len(clients)} SuperNodes connected "
                              f"within {timeout:.0f} s (clients: {', '.join(clients)})")  # fmt: skip
    found, problems, _ = ask_who(grid, nodes, clients, timeout)
    missing = [c for c in clients if c not in found]
    if missing:
        raise FederationError(f"no SuperNode answered for client(s) {', '.join(missing)}"
                              + (f" ({'; '.join(problems)})" if problems else ""))  # fmt: skip
    return {c: found[c] for c in clients}  # the config's order, as the simulation


def readmit(grid: Grid, nodes: dict[str, int], timeout: float,
            asked: set[int]) -> dict[str, int]:  # fmt: skip
    """The federation's nodes for the next round. A SuperNode that restarted
    joins the SuperLink under a new node id. While a client's node is no longer
    listed (for at most ``timeout`` seconds), every new id is asked who it is,
    once it has answered (``asked`` keeps them), and a node naming a client
    whose node is gone takes its place (logged). A live client is never moved;
    a failed query changes nothing."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            listed = set(grid.get_node_ids())
            gone = [c for c, n in nodes.items() if n not in listed]
            fresh = sorted(listed - set(nodes.values()) - asked)
            found, problems, replied = (ask_who(grid, fresh, gone, min(timeout, 30.0))
                                        if gone and fresh else ({}, [], set()))  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - the round goes on with the nodes it has
            log.warning("federation: could not ask new nodes who they are (%s)", exc)
            return nodes
        asked.update(replied)
        for problem in problems:
            log.warning("federation: a new node left out: %s", problem)
        for client, node in found.items():
            log.warning("federation: client %s re-admitted as node %s (was %s)", client,
                        node, nodes[client])  # fmt: skip
        nodes = {**nodes, **found}
        if len(found) == len(gone) or time.monotonic() >= deadline:
            return nodes
        time.sleep(0.5)


def ask_who(grid: Grid, nodes: list[int], clients: list[str],
            timeout: float) -> tuple[dict[str, int], list[str], set[int]]:  # fmt: skip
    """Ask ``nodes`` which client each is: ({client: node} for the first node
    naming each of ``clients``, one line per node left out, the nodes that
    answered)."""
    asks = [Message(RecordDict(), n, "query") for n in nodes]
    replies = grid.send_and_receive(asks, timeout=timeout)
    node_of = {m.metadata.message_id: n for m, n in zip(asks, nodes, strict=True)}
    found, problems, replied = {}, [], set()
    for reply in replies:
        node = node_of.get(reply.metadata.reply_to_message_id, "?")
        replied.add(node)
        if reply.has_error():
            problems.append(f"node {node}: {reply.error.reason}")
            continue
        name = str(reply.content.config_records[wire.META]["client"])
        if name not in clients or name in found:  # another run's node, or a duplicate
            log.warning("federation: node %s (client %r) left out", node, name)
            problems.append(f"node {node} says it is {name!r}")
            continue
        found[name] = node
    return found, problems, replied


def task_content(plan: Plan, method, layout: Layout, round: int) -> RecordDict:
    """What the server sends down: the round, the config and the adapter the
    round starts from — last round's global adapter; in round 1 none (a fresh
    LoRA), or a federated RL method's ``rl.init`` adapter, which must then be
    in the server's store."""
    server = AggregationSettings(**method.options.get("aggregation", {}))
    task = ConfigRecord({"method": method.name, "round": round, "uplink": server.uplink,
                         "config": json.dumps(plan.config, sort_keys=True)})  # fmt: skip
    start = family(method).start_adapter(layout, method, round)
    if start is None:
        return RecordDict({wire.TASK: task})
    if not Path(start).is_dir():
        raise FederationError(f"round {round} starts from {start}, which the server "
                              "does not have (train it first, e.g. with snakemake)")  # fmt: skip
    content = wire.encode_adapter(load_adapter(start))
    content[wire.TASK] = task
    return content


def collect(grid: Grid, asks: list[Message], sampled: list[str], folder_of, wire_log: str,
            timeout: float) -> tuple[dict[str, str], dict[str, str]]:  # fmt: skip
    """Send the round's messages and keep what comes back as adapter folders:
    ({client: folder}, {client: why it is lost}). A reply that is an error or
    not an adapter loses its client; each reply's records go to ``wire_log``."""
    folders, lost = {}, {}
    Path(wire_log).parent.mkdir(parents=True, exist_ok=True)
    with open(wire_log, "w") as out:
        replies = grid.send_and_receive(asks, timeout=timeout)
        # the SuperLink itself answers for a node it lost: match replies by message
        asked = {m.metadata.message_id: c for m, c in zip(asks, sampled, strict=True)}
        for reply in replies:
            client = asked.get(reply.metadata.reply_to_message_id)
            if client is None:
                log.warning("federation: a reply to no message of this round, ignored")
                continue
            if reply.has_error():
                lost[client] = f"client error: {reply.error.reason}"
                continue
            described = wire.describe(reply.content)
            out.write(json.dumps({"client": client, "records": described}) + "\n")
            try:
                wire.write_received(reply.content, folder_of(client))
            except (wire.WireError, ValueError) as exc:
                lost[client] = f"bad message: {exc}"
                continue
            folders[client] = folder_of(client)
    for client in sampled:
        if client not in folders and client not in lost:
            lost[client] = f"no reply within {timeout:.0f} s"
    return folders, lost


def run_round(grid: Grid, plan: Plan, method, layout: Layout, nodes: dict[str, int],
              round: int) -> dict:  # fmt: skip
    """Send, collect, aggregate; returns the round's comm.json record.

    Every client plays and trains every round, as in the simulation, so each
    keeps growing its own buffer; the server step then averages the round's
    sample (``participation``) of those that answered."""
    server = AggregationSettings(**method.options.get("aggregation", {}))
    clients, name = list(nodes), method.name
    content = task_content(plan, method, layout, round)
    asks = [Message(content, nodes[c], "train", group_id=str(round)) for c in clients]
    folders, lost = collect(grid, asks, clients, lambda c: layout.client(name, round, c, "adapter"),
                            layout.server(name, round, "wire.jsonl"), plan.round_timeout)  # fmt: skip
    for client, reason in lost.items():
        log.error("federation: round %d: client %s lost (%s)", round, client, reason)
    if lost and not plan.allow_partial:
        raise FederationError(f"round {round}: client(s) {', '.join(sorted(lost))} lost "
                              f"({'; '.join(f'{c}: {r}' for c, r in sorted(lost.items()))}); "
                              "allow partial participation to go on without them")  # fmt: skip
    if not folders:
        raise FederationError(f"round {round}: no client answered ({lost})")
    previous = round - 1 if round > 1 else None
    return server_round(
        [folders[c] for c in clients if c in folders], layout.global_adapter(name, round),
        layout.comm(name, round), family(method).aggregation(method),
        server, round, None,  # participant sample and DP noise from the OS
        plan.config["model"]["name"], method.sft_for(1, clients[0]).to_dict(),
        reference=next(iter(family(method).reference_adapter(layout, method, round)), None),
        previous_comm=layout.comm(name, previous) if previous else None,
        federation=clients, lost=lost,
    )  # fmt: skip

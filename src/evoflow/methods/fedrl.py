"""The federated RL family: every client learns from its own rewards, the
server averages the adapters.

====== ================================================================
fedrl  each round, every client (one env) runs one span of ``rl.span_steps``
       RL steps (any estimator of the RL trainer: ``rl.trainer.estimator``)
       on its own env's training tasks, starting from last round's global
       adapter; the server aggregates the client adapters with
       ``fed.aggregation`` (the method's ``aggregation`` on top)
====== ================================================================

Round 0 is the starting agent (``rl.init``'s final adapter, or the base model
with a fresh LoRA as round 1's start); it, every ``fed.eval_stride``-th round and
the last one are evaluated (round 0 from ``rl.init``: that method's final
evaluation, ``base.evaluated_as``). A client's
episodes, optimizer moments, critic (PPO) and RNG stay in its own folder
(``round=<t>/client=<env>/``): round ``t`` resumes that state on the server's
adapter, so only adapters ever cross to the server. The rollout budget of a
round is ``clients × span_steps × tasks_per_step × samples_per_task`` episodes;
a centralized RL method (``agentgym_rl`` on every env) plays the same budget
with ``tasks_per_step`` times the number of clients. ``rl.train_tasks`` draws a
fixed training set per client. Settings are the RL family's
(:mod:`evoflow.methods.rl`), except that ``rl.steps`` is set to
``rounds × span_steps``.
"""

from __future__ import annotations

from dataclasses import asdict, replace

from evoflow.fed.settings import AggregationSettings
from evoflow.methods import rl
from evoflow.methods.base import Kind, Method, evaluation_files
from evoflow.methods.layout import Layout

FAMILY = "fedrl"
KINDS = (Kind("fedrl", FAMILY, "FedRL", federated=True, iterative=True),)
CLIENT_LEAVES = ("adapter", "state.pt", "rollouts.parquet", "metrics.json")


def resolve(config: dict, entry: dict) -> tuple[int, dict]:
    """Rounds (the entry's, else ``fed.rounds``), the RL settings of one
    client span per round, and the server step."""
    rounds = entry.get("rounds") or config["fed"]["rounds"]
    values = {**(config.get("rl") or {}), **(entry.get("rl") or {})}
    span_steps = values.get("span_steps", rl.RLSettings.span_steps)
    _, options = rl.resolve(config, {**entry, "rl": {**(entry.get("rl") or {}),
                                                     "steps": rounds * span_steps}})  # fmt: skip
    server = AggregationSettings.from_config(config, entry)
    if server.needs_reference and options["init"] is None:
        raise ValueError(
            "a fedrl method whose fed.aggregation needs the clients' start adapter "
            "(dp_clip, server_momentum or server_lr != 1) needs rl.init: round 1 "
            "would start from a fresh LoRA the server cannot rebuild"
        )
    return rounds, {**options, "aggregation": server.to_dict()}


def link(method: Method, methods: dict[str, Method]) -> Method:
    """Record the final round of the method the clients start from."""
    init = method.options["init"]
    if init is None:
        return method
    return replace(
        method, options={**method.options, "init_round": methods[init].final_round}
    )


def client_options(method: Method) -> dict:
    """The RL settings one client span reads (``evoflow.train.rl.run``)."""
    options = {k: v for k, v in method.options.items() if k != "aggregation"}
    return asdict(rl.RLSettings(**options))


def init_adapter(layout: Layout, method: Method) -> str | None:
    init, round = method.options["init"], method.options.get("init_round")
    return None if init is None else layout.global_adapter(init, round)


def start_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """Round 1 starts from the init adapter (or a fresh LoRA), round t from t-1's average."""
    if round <= 1:
        return init_adapter(layout, method)
    return layout.global_adapter(method.name, round - 1)


def client_span_inputs(layout: Layout, method: Method, round: int, env: str) -> dict:
    """A client's span: the round's start adapter and, after round 1, the
    client's own state (optimizer, critic, RNG, KL reference) of round t-1."""
    start = start_adapter(layout, method, round)
    inputs = {"start": start} if start else {}
    if round > 1:
        inputs["state"] = layout.client(method.name, round - 1, env, "state.pt")
    return inputs


def client_adapters(layout: Layout, method: Method, round: int, envs) -> list[str]:
    return [layout.client(method.name, round, env, "adapter") for env in envs]


def previous_comm(layout: Layout, method: Method, round: int) -> str | None:
    return layout.comm(method.name, round - 1) if round > 1 else None


def aggregation(method: Method) -> str:
    return "mean"


def server_settings(method: Method) -> AggregationSettings:
    return AggregationSettings(**method.options["aggregation"])


def reference_adapter(layout: Layout, method: Method, round: int) -> list[str]:
    """The adapter every client of the round started from, where the server
    step needs it (``resolve`` makes sure round 1 has one: ``rl.init``)."""
    if not server_settings(method).needs_reference:
        return []
    return [start_adapter(layout, method, round)]


def eval_adapters(layout: Layout, method: Method, round: int, envs) -> dict[str, str]:
    """Round 0 is the starting agent; round t the global adapter after round t."""
    adapter = start_adapter(layout, method, 1) if round == 0 else (
        layout.global_adapter(method.name, round))  # fmt: skip
    return {"global": adapter} if adapter else {}


def buffers(layout: Layout, method: Method, envs) -> list[str]:
    return []


def artifacts(layout: Layout, method: Method, envs) -> list[str]:
    """Per round: every client's span folder, the global adapter, the comm record."""
    files = []
    for round in range(1, method.rounds + 1):
        files += [layout.client(method.name, round, env, leaf)
                  for env in envs for leaf in CLIENT_LEAVES]  # fmt: skip
        files += [
            layout.global_adapter(method.name, round),
            layout.comm(method.name, round),
        ]
    return files + evaluations(layout, method, envs)


evaluations = evaluation_files

"""The Fed-SE family: its kinds, and how each turns into jobs and their inputs.

A method (an entry of ``methods:`` in the config) of this family has a *kind*:

============================ ========================================================
pretrained                   the base model, evaluated once (round 0)
random                       no model: a uniformly random listed action every
                             turn, in the envs that list theirs (a reference)
local                        one LoRA per env on that env's expert demos, each
                             evaluated on its own env
centralized                  one LoRA on every env's expert demos (data pooled)
fedit                        federated rounds on static expert demos
fedit_matched                FedIT at an exploring method's training budget
                             (see below)
fedse                        federated self-evolution: explore, keep successes,
                             accumulate, train, average
fedse_no_history             buffer = expert demos + this round's successes only
fedse_no_filter              every explored episode enters the buffer
fedse_weighted               aggregation weighted by each client's explored
                             successes (see below)
============================ ========================================================

Round ``t`` of a federated method starts from the global adapter of round
``t-1``; round 0 is the base model. ``w/o History`` keeps the expert demos (the
seed buffer): only the accumulation of earlier rounds' explored successes is
removed — without demonstrations a weak base model has nothing to learn from in
round 1, which the paper's 64.1 % for this variant rules out.

``w/ Weighted Avg`` weights each client by "the number of successful
trajectories". We read that as the successful episodes the client's own
exploration has put into its buffer so far (``buffer_explored_successes`` in
the adapter's ``training.json``): the expert demonstrations are left out, since
they are a fixed seed set, not trajectories the client succeeded in, and
counting them would weight clients by the size of their demonstration set. In a
round where every client's count is 0 the server takes the unweighted mean
instead and says so in ``comm.json`` (``applied: mean`` and a ``fallback``
reason).

``FedIT, matched budget`` is the control that separates "learned from its own
successes" from "trained longer": a Fed-SE client takes its demonstrations'
steps plus up to ``explored_steps`` more on what it explored, so in a round
where exploration found successes it trains longer than a FedIT client. Each
client of ``fedit_matched`` trains, in each round, on the expert demos alone for
exactly as many optimizer steps as the client of the same env and round of the
method named by ``budget_of`` (default ``fedse``) takes — counted at run time
from that client's buffer and settings (``budget_job``), so it need not wait
for that client's training — under the same cosine schedule over those steps
and the same SFT seed. What is left between the two is the data.

``random`` plays every test task ``samples`` times (default 20), each with its
own seed, so its row is chance measured over many draws, not one.

Each training job gets its own SFT seed (batch order, LoRA dropout), derived
from (experiment seed, round, client) by ``Method.sft_for`` — not from the
method's name, so the methods of one experiment are paired. The trainer
also seeds a fresh LoRA's initialisation with it, so in round 1 of a federated
method — where every client starts from a fresh LoRA that stands for the one
global adapter the server broadcasts — the seed is shared by all clients of the
round; from round 2 on clients start from the global adapter and each client's
seed is its own.
"""

from __future__ import annotations

from evoflow.fed.settings import AggregationSettings
from evoflow.methods.base import Kind, Method, buffer_sources, evaluation_files
from evoflow.methods.layout import Layout
from evoflow.train.sft_config import SFTConfig

FAMILY = "fedse"
KINDS = (
    Kind("pretrained", FAMILY, "Pre-Trained", trains=False),
    Kind("random", FAMILY, "Random (valid actions)", trains=False),
    Kind("local", FAMILY, "Local", per_env=True),
    Kind("centralized", FAMILY, "Centralized", pooled=True),
    Kind("fedit", FAMILY, "FedIT", federated=True),
    Kind("fedit_matched", FAMILY, "FedIT, matched budget", federated=True,
         matched=True, versus=("fedit",)),
    Kind("fedse", FAMILY, "Fed-SE", ablation=True, federated=True, explores=True,
         versus=("fedit", "fedit_matched")),
    Kind("fedse_no_history", FAMILY, "Fed-SE w/o History", ablation=True,
         federated=True, explores=True, history=False, versus=("fedse",)),
    Kind("fedse_no_filter", FAMILY, "Fed-SE w/o Filtering", ablation=True,
         federated=True, explores=True, select="all", versus=("fedse",)),
    Kind("fedse_weighted", FAMILY, "Fed-SE w/ Weighted Avg", ablation=True,
         federated=True, explores=True, weighted=True, versus=("fedse",)),
)  # fmt: skip


RANDOM_SAMPLES = 20  # episodes per test task of the random reference


def resolve(config: dict, entry: dict) -> tuple[int, dict]:
    """A method's rounds (its own, else ``fed.rounds``) and its options: the
    server step (``fed.aggregation`` with the entry's ``aggregation`` on
    top), and ``budget_of`` or ``samples`` for the kinds that read them."""
    settings = AggregationSettings.from_config(config, entry)
    options = {"aggregation": settings.to_dict()}
    kind = entry.get("kind")
    for key, default, kinds in (("budget_of", "fedse", ("fedit_matched",)),
                                ("samples", RANDOM_SAMPLES, ("random",))):  # fmt: skip
        if key in entry and kind not in kinds:
            raise ValueError(f"{key} is a setting of kind {kinds[0]}, not {kind!r}")
        if kind in kinds:
            options[key] = entry.get(key, default)
    return entry.get("rounds") or config["fed"]["rounds"], options


def link(method: Method, methods: dict[str, Method]) -> Method:
    """Check that a matched-budget method names an exploring Fed-SE method
    with at least its rounds (its clients' steps are read round by round)."""
    if not method.kind.matched:
        return method
    name = method.options["budget_of"]
    other = methods.get(name)
    where = f"methods.{method.name}.budget_of"
    if other is None or other.kind.family != FAMILY or not other.kind.explores:
        raise ValueError(
            f"{where}: {name!r} is not a configured exploring method "
            f"(one of: {', '.join(n for n, m in methods.items() if m.kind.explores)})"
        )
    if other.rounds < method.rounds:
        raise ValueError(
            f"{where}: {name!r} runs {other.rounds} rounds, fewer than "
            f"{method.name}'s {method.rounds}"
        )
    return method


def budget_job(
    layout: Layout, method: Method, methods: dict[str, Method], round: int,
    env: str | None = None,
) -> tuple[str, SFTConfig] | None:  # fmt: skip
    """The training job a matched-budget client takes its steps from — the
    exploring method's client of the same round and env — as its manifest and
    SFT settings (None for every other kind, and for pooled jobs)."""
    if not method.kind.matched or env is None:
        return None
    other = methods[method.options["budget_of"]]
    return train_manifest(layout, other, round, env), sft(other, round, env)


def trained_rounds(method: Method) -> list[int]:
    """Rounds in which the method trains (none for Pre-Trained)."""
    if not method.kind.trains:
        return []
    return list(range(1, method.rounds + 1)) if method.kind.federated else [1]


def start_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """Round t of a federated method starts from round t-1's global adapter
    (round 1, and every other kind: from the base model, ``None``)."""
    if round <= 1 or not method.kind.federated:
        return None
    return layout.global_adapter(method.name, round - 1)


def explore_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """A client explores with the adapter its round starts from."""
    return start_adapter(layout, method, round)


def explore_sampling(method: Method, generation: dict) -> dict:
    """Exploration samples as ``generation`` says (its temperature)."""
    return generation


def buffer_select(method: Method) -> str:
    """Which explored episodes enter the buffer (successes; all w/o Filtering)."""
    return method.kind.select


def pooled_manifest(layout: Layout, method: Method, round: int) -> str:
    """Centralized trains one adapter on every env's expert demos."""
    return layout.pooled_manifest


def sft(method: Method, round: int, client: str):
    """The SFT settings of one training job (see ``Method.sft_for``)."""
    return method.sft_for(round, client)


def train_manifest(layout: Layout, method: Method, round: int, env: str) -> str:
    """What a client trains on: its round's buffer, or its env's expert demos."""
    if method.kind.explores:
        return layout.client(method.name, round, env, "buffer.json")
    return layout.expert_manifest(env)


def buffer_inputs(
    layout: Layout, method: Method, round: int, env: str
) -> dict[str, str]:
    """The expert demos, the round's exploration and, with History, last round's buffer."""
    return buffer_sources(layout, method, round, env, method.kind.history)


def client_adapters(layout: Layout, method: Method, round: int, envs) -> list[str]:
    """The adapters the server averages in a round: one per client (env)."""
    return [layout.client(method.name, round, env, "adapter") for env in envs]


def previous_comm(layout: Layout, method: Method, round: int) -> str | None:
    """Last round's communication record, which a round's record extends."""
    return layout.comm(method.name, round - 1) if round > 1 else None


def aggregation(method: Method) -> str:
    """The server's strategy: weighted by explored successes, or the plain mean."""
    return "weighted" if method.kind.weighted else "mean"


def server_settings(method: Method) -> AggregationSettings:
    """The method's server step (the rest of ``fed.aggregation``)."""
    return AggregationSettings(**method.options.get("aggregation", {}))


def reference_adapter(layout: Layout, method: Method, round: int) -> list[str]:
    """The adapter a round's clients started from, where the server step needs
    it (DP, server momentum): last round's global adapter (round 1: none —
    the script rebuilds the fresh LoRA every client started from)."""
    if round <= 1 or not server_settings(method).needs_reference:
        return []
    return [layout.global_adapter(method.name, round - 1)]


def eval_adapters(layout: Layout, method: Method, round: int, envs) -> dict[str, str]:
    """Adapters an evaluation plays with: ``{"global": path}`` for one adapter on
    every env, ``{env: path}`` for Local's per-env adapters, ``{}`` for the base."""
    if not method.kind.trains:
        return {}
    if method.kind.per_env:
        return {env: layout.client(method.name, 1, env, "adapter") for env in envs}
    return {"global": layout.global_adapter(method.name, round)}


def buffers(layout: Layout, method: Method, envs) -> list[str]:
    """Every round buffer of an exploring method up to its final evaluated round."""
    if not method.kind.explores:
        return []
    rounds = range(1, method.final_round + 1)
    return [
        layout.client(method.name, r, env, "buffer.json")
        for r in rounds
        for env in envs
    ]


def artifacts(layout: Layout, method: Method, envs) -> list[str]:
    """Every file the method leaves behind, round by round, evaluations included."""
    kind, name, files = method.kind, method.name, []
    for round in trained_rounds(method):
        for env in envs:
            if kind.explores:
                files += [layout.client(name, round, env, leaf)
                          for leaf in ("explore.parquet", "buffer.json")]  # fmt: skip
            if kind.federated or kind.per_env:
                files.append(layout.client(name, round, env, "adapter"))
        if kind.federated:
            files += [layout.global_adapter(name, round), layout.comm(name, round)]
        elif kind.pooled:
            files.append(layout.global_adapter(name, round))
    return files + evaluations(layout, method, envs)


evaluations = evaluation_files

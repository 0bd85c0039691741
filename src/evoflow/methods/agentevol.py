"""The AgentEvol family (AgentGym §5, Appendix D): evolve one agent by
exploring, filtering and learning, iteration after iteration.

=============== ===========================================================
agenttraj_sft   behaviour cloning on the expert set (AgentTraj-SFT): one
                adapter on every env's demonstrations, ``base_epochs``
agenttraj_l_sft the same on the larger expert set (AgentTraj-L-SFT, the
                paper's upper bound of SFT): ``envs.<env>.demos_large`` each
agentevol       round 0 is that base agent (AgentTraj-SFT's adapter and
                evaluation where one is configured with the same settings:
                one agent, trained once); iteration m = 1..M explores every
                env's training tasks with iteration m-1's agent, keeps the
                episodes that pass ``filter``, merges them with the expert
                set and learns a new agent; every iteration is evaluated
agenttraj_sft_  the control for "learned from its own successes" against
matched         "trained longer": AgentEvol's chain (``budget_of``, default
                ``agentevol``) with the expert set in place of D_m — see below
=============== ===========================================================

``AgentTraj-SFT, matched budget`` shares the named AgentEvol method's base
agent (its round 0, trained and evaluated once) and then, iteration by
iteration, learns the expert set alone for exactly as many optimizer steps as
that method's iteration m takes (counted at run time from that iteration's
data set and settings, ``budget_job``, so it runs beside that iteration),
from where that method's iteration starts (its ``init_from``: the backbone,
the base agent, or the control's own iteration m-1), under the same cosine
schedule and the same SFT seed. What is left between the two is the data.

Where AgentGym's public code departs from the paper, a setting chooses, with
the paper's choice as default (``AgentEvolSettings``; config ``agentevol:``,
per method ``methods.<name>.agentevol:``):

* ``explore_temperature`` 0.7 (the script explores greedily: 0);
* ``filter`` ``reward>=1`` — the binary filter "r < 1 is dropped". BabyAI's
  reward is discounted, below 1 even on success, so this drops every BabyAI
  success; the script keeps reward > 0.99, BabyAI > 0 and SciWorld score > 99,
  which are exactly evoflow's success flags: ``filter: success``;
* ``merge`` ``paper``: D_m = expert set ∪ successes of iteration m only; the
  script appends to the previous iteration's file (``accumulate``);
* ``init_from`` ``backbone``: every iteration trains from the initial model
  (as the script does, on data that holds the expert set); ``base_agent``
  starts from the behaviour-cloned agent; ``previous`` continues from the last
  iteration (the paper's Figure 5 ablation);
* ``iterations`` 4, ``base_epochs`` 3, ``learn_epochs`` 1 (the script runs a
  1-epoch base and three learning steps).

The paper fine-tunes every weight; here the agent is a LoRA adapter. The
paper's D_SFT also mixes in a general-domain chat set to keep the model's
language ability; ours is the expert set alone (the results table says both).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from evoflow.methods.base import (
    POOLED,
    Kind,
    Method,
    buffer_sources,
    evaluation_files,
)
from evoflow.methods.layout import EXPERT_LARGE, Layout
from evoflow.store.selection import normalise
from evoflow.train.sft_config import SFTConfig

FAMILY = "agentevol"
KINDS = (
    Kind("agenttraj_sft", FAMILY, "AgentTraj-SFT", pooled=True),
    Kind(
        "agenttraj_l_sft",
        FAMILY,
        "AgentTraj-L-SFT",
        pooled=True,
        expert_set=EXPERT_LARGE,
        versus=("agenttraj_sft",),
    ),
    Kind(
        "agentevol",
        FAMILY,
        "AgentEvol",
        pooled=True,
        explores=True,
        iterative=True,
        versus=("agenttraj_sft", "agenttraj_l_sft", "agenttraj_sft_matched"),
    ),
    Kind(
        "agenttraj_sft_matched",
        FAMILY,
        "AgentTraj-SFT, matched budget",
        pooled=True,
        iterative=True,
        matched=True,
    ),
)
LINKED_OPTIONS = ("budget_of", "init", "init_round")  # beside the settings (link)


@dataclass(frozen=True)
class AgentEvolSettings:
    iterations: int = 4
    explore_temperature: float = 0.7
    filter: str = "reward>=1"
    merge: str = "paper"
    init_from: str = "backbone"
    base_epochs: float = 3
    learn_epochs: float = 1


def resolve(config: dict, entry: dict) -> tuple[int, dict]:
    """Rounds (iterations M; a method's ``rounds`` wins) and the settings."""
    values = {**(config.get("agentevol") or {}), **(entry.get("agentevol") or {})}
    settings = AgentEvolSettings(**values)
    settings = replace(settings, filter=normalise(settings.filter))
    options = asdict(settings)
    if "budget_of" in entry and entry["kind"] != "agenttraj_sft_matched":
        raise ValueError(f"budget_of is a setting of kind agenttraj_sft_matched, "
                         f"not {entry['kind']!r}")  # fmt: skip
    if entry["kind"] == "agenttraj_sft_matched":
        options["budget_of"] = entry.get("budget_of", "agentevol")
    return entry.get("rounds") or settings.iterations, options


def link(method: Method, methods: dict[str, Method]) -> Method:
    """Round 0 trained once (``init``/``init_round``, read by ``evaluated_as``).

    AgentEvol's base agent is AgentTraj-SFT's adapter where that method clones
    the same expert set under the same SFT settings and seed (``twin``). A
    matched control names an AgentEvol method with at least its iterations; it
    takes that method's ``init_from``, and its round 0 is that method's base
    agent."""
    if method.kind.name == "agentevol":
        twin = _twin(method, methods)
        if twin is None:
            return method
        return replace(
            method, options={**method.options, "init": twin, "init_round": 1}
        )
    if not method.kind.matched:
        return method
    name, where = method.options["budget_of"], f"methods.{method.name}.budget_of"
    other = methods.get(name)
    if other is None or other.kind.name != "agentevol":
        agents = [n for n, m in methods.items() if m.kind.name == "agentevol"]
        raise ValueError(f"{where}: {name!r} is not a configured agentevol method "
                         f"(one of: {', '.join(agents)})")  # fmt: skip
    if other.rounds < method.rounds:
        raise ValueError(f"{where}: {name!r} runs {other.rounds} iterations, fewer "
                         f"than {method.name}'s {method.rounds}")  # fmt: skip
    twin = _twin(other, methods)
    init, at = (name, 0) if twin is None else (twin, 1)
    shared = {"init_from": other.options["init_from"], "init": init, "init_round": at}
    return replace(method, options={**method.options, **shared})


def _twin(agent: Method, methods: dict[str, Method]) -> str | None:
    """The first AgentTraj-SFT whose one training job is ``agent``'s base
    agent's: the same expert set and the same SFT settings, seed included."""
    for name, other in methods.items():
        if (other.kind.name == "agenttraj_sft"
                and other.kind.expert_set == agent.kind.expert_set
                and sft(other, 1) == sft(agent, 0)):  # fmt: skip
            return name
    return None


def base_agent(layout: Layout, method: Method) -> str:
    """The adapter of an AgentEvol method's base agent (a matched control's:
    that of the method it matches), wherever it was trained."""
    if "init" in method.options:
        return layout.global_adapter(
            method.options["init"], method.options["init_round"]
        )
    return layout.global_adapter(method.name, 0)


def settings(method: Method) -> AgentEvolSettings:
    own = {k: v for k, v in method.options.items() if k not in LINKED_OPTIONS}
    return AgentEvolSettings(**own)


def budget_job(
    layout: Layout, method: Method, methods: dict[str, Method], round: int
) -> tuple[str, SFTConfig] | None:
    """The training job a matched iteration takes its steps from — the named
    AgentEvol method's iteration — as its manifest and SFT settings."""
    if not method.kind.matched:
        return None
    other = methods[method.options["budget_of"]]
    return pooled_manifest(layout, other, round), sft(other, round)


def trained_rounds(method: Method) -> list[int]:
    """The base agent is round 0 of AgentEvol (round 1 of AgentTraj-SFT);
    where it is trained elsewhere (``link``: AgentTraj-SFT's, or for a matched
    control AgentEvol's), the method trains from round 1 on."""
    if method.kind.iterative:
        return list(range(int("init" in method.options), method.rounds + 1))
    return [1]


def start_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """The weights a learning step starts from (``None``: the backbone)."""
    if not method.kind.iterative or round == 0:
        return None
    init = settings(method).init_from
    if init == "base_agent" or (init == "previous" and round == 1):
        return base_agent(layout, method)
    if init == "previous":
        return layout.global_adapter(method.name, round - 1)
    return None


def explore_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """Iteration m explores with the agent of iteration m-1."""
    if round == 1:
        return base_agent(layout, method)
    return layout.global_adapter(method.name, round - 1)


def explore_sampling(method: Method, generation: dict) -> dict:
    """Exploration at the family's temperature (paper 0.7)."""
    return {**generation, "temperature": settings(method).explore_temperature}


def buffer_select(method: Method) -> str:
    return settings(method).filter


def buffer_inputs(
    layout: Layout, method: Method, round: int, env: str
) -> dict[str, str]:
    """Iteration m's kept episodes of one env over the expert demos (``paper``),
    or over iteration m-1's (``accumulate``)."""
    accumulate = settings(method).merge == "accumulate"
    return buffer_sources(layout, method, round, env, accumulate)


def merged_buffers(layout: Layout, method: Method, round: int, envs) -> list[str]:
    """D_m: the buffers of every env in iteration m, learned as one dataset."""
    return [layout.client(method.name, round, env, "buffer.json") for env in envs]


def pooled_manifest(layout: Layout, method: Method, round: int) -> str:
    """The base agent learns the expert set; iteration m learns D_m (a
    matched control: the expert set again)."""
    if not method.kind.explores or round == 0:
        return layout.pooled_manifest_of(method.kind.expert_set)
    return layout.server(method.name, round, "dataset.json")


def sft(method: Method, round: int, client: str = POOLED) -> SFTConfig:
    """``base_epochs`` for the base agent, ``learn_epochs`` for an iteration.

    The base agent (round 0) trains under the seed of a method trained once
    (round 1), AgentTraj-SFT's: both clone the expert set, so with the same
    settings they are one agent (trained once, ``link``), and AgentEvol −
    AgentTraj-SFT is what the iterations add, not the spread of two SFT seeds."""
    options = settings(method)
    base = not method.kind.iterative or round == 0
    epochs = options.base_epochs if base else options.learn_epochs
    return replace(method.sft_for(1 if base else round, client), epochs=epochs)


def eval_adapters(layout: Layout, method: Method, round: int, envs) -> dict[str, str]:
    return {"global": layout.global_adapter(method.name, round)}


def buffers(layout: Layout, method: Method, envs) -> list[str]:
    if not method.kind.explores:
        return []
    return [
        f
        for r in range(1, method.rounds + 1)
        for f in merged_buffers(layout, method, r, envs)
    ]


def artifacts(layout: Layout, method: Method, envs) -> list[str]:
    """Every file the method leaves: per iteration the exploration shards,
    buffers, the merged dataset and the agent; then the evaluations."""
    files = []
    for round in trained_rounds(method):
        if method.kind.explores and round > 0:
            for env in envs:
                files += [layout.client(method.name, round, env, leaf)
                          for leaf in ("explore.parquet", "buffer.json")]  # fmt: skip
            files.append(layout.server(method.name, round, "dataset.json"))
        files.append(layout.global_adapter(method.name, round))
    return files + evaluations(layout, method, envs)


evaluations = evaluation_files

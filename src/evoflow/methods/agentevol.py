"""The AgentEvol family (AgentGym §5, Appendix D): evolve one agent by
exploring, filtering and learning, iteration after iteration.

=============== ===========================================================
agenttraj_sft   behaviour cloning on the expert set (AgentTraj-SFT): one
                adapter on every env's demonstrations, ``base_epochs``
agenttraj_l_sft the same on the larger expert set (AgentTraj-L-SFT, the
                paper's upper bound of SFT): ``envs.<env>.demos_large`` each
agentevol       round 0 is that base agent; iteration m = 1..M explores every
                env's training tasks with iteration m-1's agent, keeps the
                episodes that pass ``filter``, merges them with the expert
                set and learns a new agent; every iteration is evaluated
=============== ===========================================================

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
        versus=("agenttraj_sft", "agenttraj_l_sft"),
    ),
)


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
    return entry.get("rounds") or settings.iterations, asdict(settings)


def settings(method: Method) -> AgentEvolSettings:
    return AgentEvolSettings(**method.options)


def trained_rounds(method: Method) -> list[int]:
    """The base agent is round 0 of AgentEvol (round 1 of AgentTraj-SFT)."""
    if method.kind.iterative:
        return list(range(0, method.rounds + 1))
    return [1]


def start_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """The weights a learning step starts from (``None``: the backbone)."""
    if not method.kind.iterative or round == 0:
        return None
    init = settings(method).init_from
    if init == "base_agent":
        return layout.global_adapter(method.name, 0)
    if init == "previous":
        return layout.global_adapter(method.name, round - 1)
    return None


def explore_adapter(layout: Layout, method: Method, round: int) -> str | None:
    """Iteration m explores with the agent of iteration m-1."""
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
    """The base agent learns the expert set; iteration m learns D_m."""
    if not method.kind.iterative or round == 0:
        return layout.pooled_manifest_of(method.kind.expert_set)
    return layout.server(method.name, round, "dataset.json")


def sft(method: Method, round: int, client: str = POOLED) -> SFTConfig:
    """``base_epochs`` for the base agent, ``learn_epochs`` for an iteration."""
    options = settings(method)
    base = not method.kind.iterative or round == 0
    epochs = options.base_epochs if base else options.learn_epochs
    return replace(method.sft_for(round, client), epochs=epochs)


def eval_adapters(layout: Layout, method: Method, round: int, envs) -> dict[str, str]:
    return {"global": layout.global_adapter(method.name, round)}


def buffers(layout: Layout, method: Method, envs) -> list[str]:
    if not method.kind.iterative:
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
        if method.kind.iterative and round > 0:
            for env in envs:
                files += [layout.client(method.name, round, env, leaf)
                          for leaf in ("explore.parquet", "buffer.json")]  # fmt: skip
            files.append(layout.server(method.name, round, "dataset.json"))
        files.append(layout.global_adapter(method.name, round))
    return files + evaluations(layout, method, envs)


evaluations = evaluation_files

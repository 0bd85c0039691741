"""The RL family (AgentGym-RL §3): train one agent with outcome rewards,
span after span of training steps.

================ ==========================================================
agentgym_rl      a fixed horizon: every step plays up to ``horizon`` turns
                 (default: each env's ``max_turns``; AgentGym-RL-3B/7B)
scalinginter_rl  the horizon grows in phases, ``horizons`` each held for
                 ``phase_steps`` steps (ScalingInter-RL; the paper's scripts:
                 BabyAI [6, 13, 20], TextCraft and SciWorld [10, 20, 30],
                 every 100 steps)
================ ==========================================================

Round ``k`` of a method is its k-th span of ``span_steps`` steps (one Snakemake
job, bounded in time, resumable alone); round 0 is the starting agent: ``init``
names a method whose final adapter RL starts from (an SFT warm-up, as the
embedded experiment needs), or null for a fresh LoRA on the backbone (the
paper's choice: RL from the instruct model). Every round is evaluated; with
``init``, round 0's evaluation is that method's final one
(``base.evaluated_as``). ``train_subsets`` (env -> names of strata or finer
subsets, e.g. BabyAI's ``goto`` family or its ``GoToRedBall`` level) restricts
the tasks RL draws, for a small agent that solves only some of them;
``train_tasks`` keeps a seeded draw of that many of them, a fixed training set
whose success can be compared step by step when every step plays all of it.
Trainer settings (``rl.trainer``: estimator, samples per task, lr, …) are
``evoflow.train.rl.config.RLConfig``'s, paper values by default.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from evoflow.methods import base
from evoflow.methods.base import Kind, Method, evaluation_files, span_files
from evoflow.methods.layout import Layout
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.schedule import HorizonSchedule

FAMILY = "rl"
KINDS = (
    Kind("agentgym_rl", FAMILY, "AgentGym-RL", iterative=True),
    Kind(
        "scalinginter_rl",
        FAMILY,
        "ScalingInter-RL",
        iterative=True,
        versus=("agentgym_rl",),
    ),
)
SPAN_LEAVES = ("state.pt", "rollouts.parquet", "metrics.json")


@dataclass(frozen=True)
class RLSettings:
    steps: int = 300
    span_steps: int = 50
    horizon: int | None = None  # agentgym_rl: fixed turns (None: env max_turns)
    horizons: tuple[int, ...] = (10, 20, 30)  # scalinginter_rl phases
    phase_steps: int = 100
    init: str | None = None  # method whose final adapter RL starts from
    init_round: int | None = None  # that method's final round (set by ``link``)
    trainer: dict = field(default_factory=dict)  # RLConfig overrides
    train_subsets: dict | None = None  # env -> strata / subsets RL trains on
    train_tasks: int | None = None  # a fixed training set: at most this many tasks


def resolve(config: dict, entry: dict) -> tuple[int, dict]:
    """Rounds (spans) and settings; the trainer settings are checked here."""
    values = {**(config.get("rl") or {}), **(entry.get("rl") or {})}
    trainer = {**(config.get("rl") or {}).get("trainer", {}),
               **(entry.get("rl") or {}).get("trainer", {})}  # fmt: skip
    settings = RLSettings(**{**values, "trainer": trainer})
    settings = replace(settings, horizons=tuple(settings.horizons))
    HorizonSchedule(settings.horizons, settings.phase_steps)  # names what is wrong
    RLConfig(**{"seed": config["seed"], **trainer})
    unknown = set(settings.train_subsets or {}) - set(config["envs"])
    if unknown:
        raise ValueError(
            f"rl.train_subsets names envs not configured: {sorted(unknown)}"
        )
    if settings.train_tasks is not None and settings.train_tasks < 1:
        raise ValueError(f"rl.train_tasks must be >= 1, got {settings.train_tasks}")
    if settings.init is not None and settings.init not in config["methods"]:
        raise ValueError(f"rl.init {settings.init!r} is not a configured method")
    return span_count(asdict(settings)), asdict(settings)


def span_count(options: dict) -> int:
    """Spans (rounds) of a method with these settings."""
    return math.ceil(options["steps"] / options["span_steps"])


def link(method: Method, methods: dict[str, Method]) -> Method:
    """Record the final round of the method RL starts from."""
    options = settings(method)
    if options.init is None:
        return method
    start = methods[options.init]
    return replace(method, options={**method.options, "init_round": start.final_round})


def settings(method: Method) -> RLSettings:
    return RLSettings(**method.options)


def trainer_config(method: Method, seed: int) -> RLConfig:
    return RLConfig(**{"seed": seed, **settings(method).trainer})


def schedule(method: Method) -> HorizonSchedule | None:
    """The horizon by step: phases for ScalingInter-RL, ``rl.horizon`` for a
    fixed one; None: every env plays up to its own ``max_turns``."""
    options = settings(method)
    if method.kind.name == "scalinginter_rl":
        return HorizonSchedule(tuple(options.horizons), options.phase_steps)
    return HorizonSchedule((options.horizon,)) if options.horizon else None


def span_range(method: Method, round: int) -> tuple[int, int]:
    """(first global step, steps) of span ``round`` (1-based)."""
    options = settings(method)
    return base.span_range(round, options.span_steps, options.steps)


def init_adapter(layout: Layout, method: Method) -> str | None:
    options = settings(method)
    if options.init is None:
        return None
    return layout.global_adapter(options.init, options.init_round)


def span_inputs(layout: Layout, method: Method, round: int) -> dict:
    """Span 1 starts from the init adapter (if any); span k from span k-1."""
    if round == 1:
        start = init_adapter(layout, method)
        return {"init": start} if start else {}
    return {"adapter": layout.global_adapter(method.name, round - 1),
            "state": layout.server(method.name, round - 1, "state.pt")}  # fmt: skip


def eval_adapters(layout: Layout, method: Method, round: int, envs) -> dict[str, str]:
    """Round 0 is the starting agent; round k the adapter after span k."""
    if round == 0:
        start = init_adapter(layout, method)
        return {"global": start} if start else {}
    return {"global": layout.global_adapter(method.name, round)}


def buffers(layout: Layout, method: Method, envs) -> list[str]:
    return []


def artifacts(layout: Layout, method: Method, envs) -> list[str]:
    """Per span: the adapter, resumable state, rollouts and metrics."""
    return span_files(layout, method, SPAN_LEAVES) + evaluations(layout, method, envs)


evaluations = evaluation_files

"""The SAGE family (seed 001): four roles of one model grow their own curriculum.

=================== =========================================================
sage                every role trains (Challenger, Planner, Solver, Critic)
sage_wo_challenger  the Challenger plays but does not train (Table 3)
sage_wo_planner     the Planner plays but does not train (the missing row)
sage_wo_solver      the Solver plays but does not train (Table 3)
sage_wo_critic      the Critic plays but does not train (Table 3)
sage_seed_pool      no Challenge phase: the Solver's RL on the seed pool
                    alone, the same draws and settings (the control that
                    isolates what the Challenger's questions add)
=================== =========================================================

Experiment-wide (top-level ``sage:``): ``data`` (the seed pool, the held-out
evaluation set and the validation set, ``evoflow.sage.data.DataSettings``) and ``warmup`` (SFT on
the roles' tags before self-play; null: none). Per method (``sage:`` of a
method overrides the top level): steps, span_steps, the step's settings
(``evoflow.sage.step.SageSettings``), ``adapters`` (``shared``, the paper's
one LoRA for all roles, or ``per_role``), token caps and ``trainer`` (RLConfig
overrides; the estimator is always ``task_relative``, KL off as in the
paper). Round k is the k-th span; round 0 is the warm-up model; every
``eval_stride``-th round and the last are evaluated on the held-out set.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from evoflow.methods import base
from evoflow.methods.base import Kind, Method, span_files
from evoflow.methods.layout import Layout
from evoflow.sage.data import DataSettings
from evoflow.sage.roles import ROLES, adapter_name
from evoflow.sage.step import SageSettings
from evoflow.train.rl.config import RLConfig

FAMILY = "sage"
KINDS = (
    Kind("sage", FAMILY, "SAGE", iterative=True, versus=("sage_seed_pool",)),
    Kind("sage_wo_challenger", FAMILY, "w/o challenger training", iterative=True,
         versus=("sage",)),
    Kind("sage_wo_planner", FAMILY, "w/o planner training", iterative=True,
         versus=("sage",)),
    Kind("sage_wo_solver", FAMILY, "w/o solver training", iterative=True,
         versus=("sage",)),
    Kind("sage_wo_critic", FAMILY, "w/o critic training", iterative=True,
         versus=("sage",)),
    Kind("sage_seed_pool", FAMILY, "w/o Challenger (seed pool only)", iterative=True),
)  # fmt: skip
SPAN_LEAVES = ("state.pt", "rollouts.parquet", "metrics.json", "pool.parquet")
TRAINER = {"estimator": "task_relative", "kl_coef": 0.0, "entropy_coef": 0.0}
STEP_KEYS = ("questions", "references", "solver_samples", "planning", "norm",
             "require_solved", "challenge")  # fmt: skip
NO_CHALLENGE = ("sage_seed_pool",)  # kinds without a Challenge phase


@dataclass(frozen=True)
class SageOptions:
    steps: int = 200
    span_steps: int = 20
    questions: int = 4
    references: int = 1
    solver_samples: int = 4
    planning: bool = True
    norm: str = "fixed"
    require_solved: bool = False
    adapters: str = "shared"  # or per_role (evoflow.sage.span)
    max_new_tokens: int = 512  # per role reply in training steps
    eval_max_new_tokens: int = 512
    trainer: dict = field(default_factory=dict)  # RLConfig overrides
    challenge: bool = True  # set by the kind (NO_CHALLENGE), not the config


def train_roles(method: Method) -> tuple[str, ...]:
    left_out = method.kind.name.removeprefix("sage_wo_")
    return tuple(r for r in ROLES if r != left_out)


def resolve(config: dict, entry: dict) -> tuple[int, dict]:
    """Spans and settings of one SAGE method, every value checked here."""
    top = {
        k: v
        for k, v in (config.get("sage") or {}).items()
        if k not in ("data", "warmup")
    }
    own = entry.get("sage") or {}
    trainer = {**top.get("trainer", {}), **own.get("trainer", {})}
    challenge = entry["kind"] not in NO_CHALLENGE
    options = SageOptions(**{**top, **own, "trainer": trainer, "challenge": challenge})
    step_settings(options)
    adapter_name("solver", options.adapters)  # names a bad value
    trainer_config(options, config["seed"])
    data_settings(config)
    resolved = asdict(options)
    resolved["warmup"] = (config.get("sage") or {}).get("warmup", {}) is not None
    return math.ceil(options.steps / options.span_steps), resolved


def data_settings(config: dict) -> DataSettings:
    data = dict((config.get("sage") or {}).get("data") or {})
    for key in ("math_levels", "eval_math_levels"):
        if key in data:
            data[key] = tuple(data[key])
    data["benchmarks"] = tuple(sorted((data.get("benchmarks") or {}).items()))
    return DataSettings(**data)


def step_settings(options: SageOptions | dict) -> SageSettings:
    values = asdict(options) if isinstance(options, SageOptions) else options
    return SageSettings(**{k: values[k] for k in STEP_KEYS})


def trainer_config(options: SageOptions | dict, seed: int) -> RLConfig:
    values = asdict(options) if isinstance(options, SageOptions) else options
    given = values["trainer"]
    if given.get("estimator", "task_relative") != "task_relative":
        raise ValueError("sage.trainer.estimator: SAGE trains with task_relative only")
    try:
        return RLConfig(**{"seed": seed, **TRAINER, **given})
    except TypeError as error:  # an unknown key
        raise ValueError(f"sage.trainer: {error}") from None


def span_range(method: Method, round: int) -> tuple[int, int]:
    """(first global step, steps) of span ``round`` (1-based)."""
    options = method.options
    return base.span_range(round, options["span_steps"], options["steps"])


def span_inputs(layout: Layout, method: Method, round: int) -> dict:
    """Span 1 starts from the warm-up adapter (if any) and the seed pool; span
    k from span k-1's folder and the pool files of every span before it."""
    pools = [layout.sage_data("pool.parquet")]
    pools += [layout.server(method.name, r, "pool.parquet") for r in range(1, round)]
    if round == 1:
        return {
            "pools": pools,
            **({"init": layout.sage_warmup} if _warm(method) else {}),
        }
    return {"pools": pools, "adapter": layout.global_adapter(method.name, round - 1),
            "state": layout.server(method.name, round - 1, "state.pt")}  # fmt: skip


def _warm(method: Method) -> bool:
    return method.options["warmup"]


def eval_adapter(layout: Layout, method: Method, round: int) -> str | None:
    if round == 0:
        return layout.sage_warmup if _warm(method) else None
    return layout.global_adapter(method.name, round)


def evaluations(layout: Layout, method: Method, envs) -> list[str]:
    return [
        layout.sage_eval(method.name, r, "metrics.json") for r in method.eval_rounds
    ]


def buffers(layout: Layout, method: Method, envs) -> list[str]:
    return []


def artifacts(layout: Layout, method: Method, envs) -> list[str]:
    return span_files(layout, method, SPAN_LEAVES) + evaluations(layout, method, envs)

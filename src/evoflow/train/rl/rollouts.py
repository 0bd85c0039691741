"""Where an RL step's episodes come from: the task pool, the span's horizons,
the draws of a step (with DAPO's dynamic sampling) and which samples can train."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evoflow.envs.base import TextEnv
from evoflow.envs.formats import NO_THINKING
from evoflow.policy.base import Policy, SamplingParams
from evoflow.rollout.engine import Job, RolloutSpec, play
from evoflow.seeding import derive_seed, py_random
from evoflow.store.schema import Episode
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.groups import first_groups, group_key, mixed_groups
from evoflow.train.rl.schedule import HorizonSchedule


@dataclass(frozen=True)
class TaskPool:
    """Where episodes come from: env factories and the training tasks to draw."""

    factories: dict[str, Callable[[], TextEnv]]
    tasks: list[tuple[str, str]]  # (env, task id)
    template: tuple = NO_THINKING  # chat-template options of the envs' reply formats
    max_turns: dict[str, int] | None = None  # per-env caps when there is no schedule
    max_invalid: int | None = None  # unusable replies in a row that end an episode
    constrain_actions: bool = False  # actions decoded from each env's listed ones


@dataclass(frozen=True)
class Span:
    """Which steps one job runs, and the labels of what it writes."""

    model: str
    experiment: str
    method: str
    start: int
    steps: int
    schedule: HorizonSchedule | None  # None: each env's own cap (TaskPool.max_turns)
    config_hash: str = ""

    def horizon(self, step: int, env: str, pool: TaskPool) -> int | None:
        if self.schedule is not None:
            return self.schedule.horizon(step)
        return (pool.max_turns or {}).get(env)


def collect(policy: Policy, pool: TaskPool, span: Span, config: RLConfig,
              step: int, adapter: Path) -> tuple[list[Episode], list[Episode], int]:  # fmt: skip
    """Every episode played, those to train on, and how many batches were drawn.

    Without dynamic sampling one batch is drawn and every usable sample trains.
    With it, only groups whose rewards differ train (a flat group has zero
    advantage), and batches of fresh tasks are drawn until ``tasks_per_step``
    such groups or ``max_draws`` batches; a draw that brings more than the
    step still needs adds only the first of them (DAPO fills the batch to its
    size, never past it).
    """
    episodes, train, seen, draws = [], [], set(), 0
    for draw in range(config.max_draws if config.dynamic_sampling else 1):
        tasks = _draw(pool, config, step, draw, seen)
        if not tasks:
            break
        draws += 1
        seen.update(tasks)
        played = play(policy, pool.factories, _jobs(pool, span, config, step, draw,
                      tasks, adapter), config.width, progress=False)  # fmt: skip
        episodes += played
        kept = [e for e in played if usable(e)]
        train += mixed_groups(kept) if config.dynamic_sampling else kept
        if len({group_key(e) for e in train}) >= config.tasks_per_step:
            break
    if config.dynamic_sampling:
        train = first_groups(train, config.tasks_per_step)
    return episodes, train, draws


def _draw(pool: TaskPool, config: RLConfig, step: int, draw: int, seen: set) -> list:
    """Batch ``draw`` of step ``step``: tasks not drawn earlier in the step."""
    left = [t for t in pool.tasks if t not in seen]
    rng = py_random(config.seed, "rl-tasks", step, *((draw,) if draw else ()))
    return rng.sample(left, min(config.tasks_per_step, len(left)))


def _jobs(pool: TaskPool, span: Span, config: RLConfig, step: int, draw: int,
          tasks: list, adapter: Path) -> list[Job]:  # fmt: skip
    seed = derive_seed(config.seed, "rl", step, *((draw,) if draw else ()))
    specs = {
        env: RolloutSpec(
            experiment=span.experiment,
            method=span.method,
            split="train",
            source="explore",
            round=step,
            client=env,
            seed=seed,
            horizon=span.horizon(step, env, pool),
            width=config.width,
            max_invalid=pool.max_invalid,
            constrain_actions=pool.constrain_actions,
            samples=config.samples_per_task,
            adapter=str(adapter),
            sampling=SamplingParams(
                temperature=config.temperature, max_new_tokens=config.max_new_tokens
            ),
        )  # fmt: skip
        for env in pool.factories
    }
    return [Job(env, task, k, specs[env]) for env, task in tasks
            for k in range(config.samples_per_task)]  # fmt: skip


def usable(episode: Episode) -> bool:
    """A sample that can train: finite reward, no env error, sampled tokens kept."""
    turns = [m for m in episode.messages if m.role == "assistant"]
    return (
        math.isfinite(episode.reward)
        and episode.termination != "error"
        and bool(turns)
        and all(m.token_ids and m.logprobs is not None for m in turns)
    )


def episode_metrics(episodes, kept, step: int, horizon: dict) -> dict:
    n = max(1, len(kept))
    turns = [m for e in kept for m in e.messages if m.role == "assistant"]
    return {
        "step": step, "horizon": horizon, "episodes": len(episodes),
        "dropped": len(episodes) - len(kept),
        "reward": round(sum(e.reward for e in kept) / n, 4),
        "success": round(sum(e.success for e in kept) / n, 4),
        "turns": round(sum(e.n_turns for e in kept) / n, 3),
        "response_length": round(
            sum(len(m.token_ids or []) for m in turns) / max(1, len(turns)), 2),
        "context_cut": sum(e.termination == "context" for e in kept),
    }  # fmt: skip

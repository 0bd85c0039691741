"""SAGE training, one span of steps at a time, resumable like the RL spans.

Each step saves the current LoRA, lets the four roles play one SAGE step with
it (``evoflow.sage.step``), stores every role reply as a one-turn episode
(``agent_role`` the role, reward the role's reward, token ids and log-probs as
sampled) and updates the one shared adapter with Task-Relative REINFORCE++:
advantages whitened within each role's batch (estimator ``task_relative``,
groups = roles). Roles left out of ``train_roles`` still play; their replies
are stored but not trained on (the paper's "w/o X training" ablations).

``adapters``: ``shared`` (the paper's choice: one LLM plays every role, so one
LoRA learns from all four) or ``per_role``: one LoRA per role in the same
model, each updated on its own role's replies (its own whitening group). The
Solver's is the adapter folder itself — what evaluation reads — and the other
roles' lie in its subfolders ``challenger/``, ``planner/``, ``critic/``.

A span writes, atomically, one folder: the RL span files (adapter, state,
rollouts, metrics) plus ``POOL_FILE`` with the questions it added. The pool a
span starts from is the seed file and every earlier span's file.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from evoflow.envs.formats import NO_THINKING
from evoflow.policy.base import Generation, Policy, SamplingParams
from evoflow.sage import pool as pools
from evoflow.sage.roles import ROLES, TEMPERATURES, adapter_name
from evoflow.sage.step import Call, Checker, SageSettings, run_step
from evoflow.seeding import derive_seed, py_random
from evoflow.store.schema import Episode, Message
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.trainer import (
    ADAPTER,
    METRICS,
    ROLLOUTS,
    STATE,
    Span,
    learn,
    load_learner,
    save_adapter,
    train_adapter,
    update_metrics,
    write_span,
)  # fmt: skip

log = logging.getLogger(__name__)
SPAN_FILES = (ADAPTER, STATE, ROLLOUTS, METRICS, pools.POOL_FILE)


@dataclass(frozen=True)
class SageSpan:
    span: Span  # model, experiment, method, start, steps (no horizon schedule)
    settings: SageSettings
    train_roles: tuple[str, ...] = ROLES
    max_new_tokens: int = 256
    adapters: str = "shared"

    def __post_init__(self) -> None:
        unknown = set(self.train_roles) - set(ROLES)
        if unknown:
            raise ValueError(f"train_roles: unknown roles {sorted(unknown)}; "
                             f"roles are {', '.join(ROLES)}")  # fmt: skip
        adapter_name("solver", self.adapters)  # names a bad value

    def adapter(self, role: str) -> str:
        """The name of the adapter ``role`` plays and trains with."""
        return adapter_name(role, self.adapters)


def run_sage_span(job: SageSpan, config: RLConfig, pool_files: list[Path],
                  policy: Policy, checker: Checker, output: str | Path,
                  previous: str | Path | None = None,
                  init_adapter: str | Path | None = None) -> dict:  # fmt: skip
    """Train steps ``start`` … ``start + steps - 1``; write the folder ``output``."""
    if config.estimator != "task_relative":
        raise ValueError(
            f"SAGE trains with estimator task_relative, got {config.estimator!r}"
        )
    started = time.perf_counter()
    span, output = job.span, Path(output)
    own = tuple(n for n in dict.fromkeys(map(job.adapter, ROLES)) if n != "default")
    learner = load_learner(span, config, previous, init_adapter, own)
    pool = pools.read(pool_files)
    known = len(pool)
    live = output.with_name(f".{output.name}.live")
    rows, episodes = [], []
    try:
        for step in range(span.start, span.start + span.steps):
            played, row = _train_step(
                learner, policy, pool, checker, job, config, step, live
            )
            episodes += played
            rows.append(row)
            log.info("sage step %d: %s", step, row)
    finally:
        shutil.rmtree(live, ignore_errors=True)
    new = pool.entries[known:]
    return write_span(output, learner, span, config, episodes, rows, started,
                      {pools.POOL_FILE: lambda path: pools.write(new, path)})  # fmt: skip


def _train_step(learner, policy, pool, checker, job: SageSpan, config: RLConfig,
                step: int, live: Path) -> tuple[list[Episode], dict]:  # fmt: skip
    adapter = live / f"step-{step}"
    save_adapter(learner, adapter, job.span.model)
    folders = {r: adapter / name if name != "default" else adapter
               for r, name in ((r, job.adapter(r)) for r in ROLES)}  # fmt: skip
    ask = asker(policy, folders, config.seed, step, job.max_new_tokens)
    rng = py_random(config.seed, "sage-step", step)
    result = run_step(step, pool, ask, checker, job.settings, rng)
    shutil.rmtree(adapter, ignore_errors=True)
    episodes = to_episodes(result.calls, job.span, config.seed, step)
    train = [e for e in episodes if e.agent_role in job.train_roles
             and e.messages[-1].token_ids]  # fmt: skip
    row = {"step": step, **result.metrics}
    clock = time.perf_counter()
    if job.adapters == "shared":
        stats = (
            learn(learner, train, config, NO_THINKING, row, group=_role)
            if train
            else None
        )
        row.update(update_metrics(stats))
    else:
        row.update(_learn_per_role(learner, train, config, job))
    row["seconds"]["update"] = round(time.perf_counter() - clock, 3)
    row.pop("_times", None)
    return episodes, row


def _learn_per_role(
    learner, train: list[Episode], config: RLConfig, job: SageSpan
) -> dict:
    """One update of each role's own adapter on that role's replies."""
    updates = {}
    for role in ROLES:
        mine = [e for e in train if e.agent_role == role]
        if mine:
            train_adapter(learner, job.adapter(role))
            stats = learn(learner, mine, config, NO_THINKING, {}, group=_role)
            updates[role] = update_metrics(stats)
    train_adapter(learner, "default")
    tokens = sum(u["tokens"] for u in updates.values())
    return {"updated": bool(updates), "tokens": tokens, "updates": updates}


def _role(episode: Episode) -> str:
    return episode.agent_role or ""


def asker(policy: Policy, adapters: dict[str, Path] | None, seed: int, step: int,
          max_new_tokens: int):  # fmt: skip
    """``ask(role, chats, purpose)`` for ``run_step``: the role's adapter folder
    (None: the base model) and temperature, one seed per chat keyed by the
    step, the call's purpose and the chat's place in it. Keyed by purpose, not
    by call order, a step without its Challenge phase (the seed-pool control)
    samples its Plan-Solve answers with the same seeds as the full step."""

    def ask(role: str, chats: list, purpose: str) -> list[Generation]:
        params = SamplingParams(
            temperature=TEMPERATURES[role], max_new_tokens=max_new_tokens
        )
        seeds = [
            derive_seed(seed, "sage", step, role, purpose, i) for i in range(len(chats))
        ]
        where = None if adapters is None else str(adapters[role])
        return policy.generate(chats, params, adapter=where, seeds=seeds)

    return ask


def to_episodes(calls: list[Call], span: Span, seed: int, step: int) -> list[Episode]:
    """Each role reply as a one-turn episode of the store."""
    episodes = []
    for i, call in enumerate(calls):
        g = call.generation
        messages = [Message(m["role"], m["content"], loss=False) for m in call.chat]
        messages.append(Message("assistant", g.text, loss=True, token_ids=g.token_ids,
                                logprobs=g.logprobs, reward=call.reward))  # fmt: skip
        episodes.append(Episode(
            experiment=span.experiment, method=span.method, env="sage",
            task_id=call.item, split="train", episode_id=f"s{step}-{i}",
            source="explore", model_id=span.model, seed=seed,
            temperature=TEMPERATURES[call.role], horizon=1, reward=call.reward,
            success=_success(call),
            n_turns=1, n_tokens=g.prompt_tokens + g.completion_tokens,
            termination="context" if g.finish == "context" else "done",
            messages=messages, group=call.role, agent_role=call.role,
            extras={"step": step, **{k: v for k, v in call.info.items() if k != "plan"}},
        ))  # fmt: skip
    return episodes


def _success(call: Call) -> bool:
    """Solver: a fully right answer; Challenger: its question joined the pool."""
    if call.role == "solver":
        return call.info["correct"] == 1.0
    return call.info.get("pool") == "accepted"

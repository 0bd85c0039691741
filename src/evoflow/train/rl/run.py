"""One RL span as a workflow job: from a rule's settings to ``run_span``."""

from __future__ import annotations

import logging
from pathlib import Path

from evoflow.envs import configured_factory, in_strata, split_ids
from evoflow.methods import rl
from evoflow.methods.base import Kind, Method
from evoflow.methods.registry import KINDS
from evoflow.seeding import py_random
from evoflow.train.rl.trainer import Span, TaskPool, run_span
from evoflow.train.sft_config import SFTConfig

log = logging.getLogger(__name__)


def run_rl_span(settings: dict, config_hash: str, method: str, round: int,
                inputs: dict, output: str | Path, threads: int = 1) -> dict:  # fmt: skip
    """Train span ``round`` of an RL method; write its folder ``output``.

    ``settings`` holds experiment, seed, model, generation, the envs (their
    ``max_turns`` and ``remote``) and the method's ``kind`` and ``options``;
    ``inputs`` the previous span's folder (``previous``) and/or the adapter the
    span starts from (``init``: the first span's; with ``previous``, a federated
    client's round start, see ``load_learner``), if any.
    """
    from evoflow.runtime import configure_threads, policy_from_config

    configure_threads(threads)
    resolved = _method(method, settings)
    config = rl.trainer_config(resolved, settings["seed"])
    envs = settings["envs"]
    pool = TaskPool(
        factories={env: configured_factory(env, envs[env]) for env in envs},
        tasks=fixed_set(training_tasks(envs, rl.settings(resolved).train_subsets or {}),
                        rl.settings(resolved).train_tasks, settings["seed"]),
        max_turns={env: envs[env]["max_turns"] for env in envs},
        max_invalid=settings["generation"]["max_invalid"],
        constrain_actions=settings["generation"]["constrain_actions"],
    )  # fmt: skip
    start, steps = rl.span_range(resolved, round)
    span = Span(settings["model"]["name"], settings["experiment"], method, start,
                steps, rl.schedule(resolved), config_hash)  # fmt: skip
    policy = policy_from_config(settings)
    try:
        return run_span(span, config, pool, policy, output,
                        previous=inputs.get("previous"), init_adapter=inputs.get("init"))  # fmt: skip
    finally:
        policy.close()


def training_tasks(envs: dict, subsets: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(env, task) of each env's train split (within ``envs.<env>.strata``);
    where ``subsets[env]`` is given, only tasks whose stratum or subset
    (``TextEnv.subset``) it names."""
    tasks = []
    for env, options in envs.items():
        ids = split_ids(env, "train", options["remote"], options.get("strata"))
        if env in subsets:
            ids = in_strata(env, ids, subsets[env], f"rl.train_subsets.{env}")
        tasks += [(env, t) for t in ids]
    return tasks


def fixed_set(tasks: list, size: int | None, seed: int) -> list:
    """A seeded draw of at most ``size`` of ``tasks``, in their order (None: all)."""
    if size is None or size >= len(tasks):
        return tasks
    keep = set(py_random(seed, "rl-train-tasks").sample(range(len(tasks)), size))
    return [t for i, t in enumerate(tasks) if i in keep]


def _method(name: str, settings: dict) -> Method:
    kind: Kind = KINDS[settings["kind"]]
    options = settings["options"]
    return Method(name, kind, rl.span_count(options), 1, SFTConfig(), options)

"""Run a policy greedily on the evaluated tasks of every environment; store them.

The evaluated split is test, or validation in a config that chooses settings
(``evaluation.split``).

All environments of a (method, round) are evaluated in one batch: the model is
loaded once and decoding steps are shared by every live episode (episodes with
different adapters — the Local baseline — form separate generation groups).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from evoflow.atomic import write_json
from evoflow.envs import configured_factory, env_class, split_ids
from evoflow.evaluate.metrics import episode_metrics
from evoflow.policy.adapters import adapter_digest
from evoflow.policy.base import Policy
from evoflow.policy.random_choice import RandomChoicePolicy
from evoflow.rollout.engine import Job, RolloutSpec, play
from evoflow.seeding import choose_stratified
from evoflow.store import Episode, ShardMeta, write_shard

log = logging.getLogger(__name__)


EVAL_SPLITS = ("test", "validation")


def eval_tasks(
    env_name: str,
    count: int | None,
    seed: int,
    remote: dict | None = None,
    strata: list[str] | None = None,
    split: str = "test",
) -> list[str]:
    """The evaluated tasks: the same for every method of an experiment.

    A subset of ``split`` (test, or validation where settings are chosen) is
    drawn stratified by the env's ``stratum`` (BabyAI level family, TextCraft
    depth, Maze distance, …), so it keeps the split's mix; with ``strata``
    (``envs.<env>.strata``) only those strata's tasks are drawn from; a remote
    env's tasks form one stratum.
    """
    if split not in EVAL_SPLITS:
        raise ValueError(f"evaluation split {split!r} is not one of {EVAL_SPLITS}")
    ids = split_ids(env_name, split, remote, strata)
    stratum = env_class(env_name).stratum if remote is None else (lambda _: "all")
    return choose_stratified(ids, count, stratum, seed, split, env_name)


def evaluate_envs(
    policy: Policy,
    specs: Mapping[str, RolloutSpec],
    envs: Mapping[str, Mapping],
    width: int = 16,
    split: str = "test",
) -> dict[str, tuple[list[Episode], dict]]:
    """Greedy episodes and metrics per environment (``specs`` keyed by env), on
    the ``split`` tasks of each env's config entry (``test`` tasks of it,
    ``remote``, ``strata``, ``dialect``)."""
    jobs, factories = [], {}
    for env_name, spec in specs.items():
        digest = adapter_digest(spec.adapter) if spec.adapter else None
        spec = replace(spec, split=split, source="eval", adapter_sha256=digest,
                       sampling=replace(spec.sampling, temperature=0.0))  # fmt: skip
        env = envs[env_name]
        factories[env_name] = configured_factory(env_name, env)
        tasks = eval_tasks(env_name, env.get("test"), spec.seed, env.get("remote"),
                           env.get("strata"), split)  # fmt: skip
        jobs += [
            Job(env_name, task, k, spec) for task in tasks for k in range(spec.samples)
        ]
    episodes = play(policy, factories, jobs, width)
    results = {}
    for env_name, spec in specs.items():
        mine = [e for e in episodes if e.env == env_name]
        digest = mine[0].adapter_sha256 if mine else None
        metrics = {"env": env_name, "method": spec.method, "round": spec.round,
                   "adapter_sha256": digest, **episode_metrics(mine)}  # fmt: skip
        log.info("evaluate %s %s round %d: success %.3f over %d episodes", env_name,
                 spec.method, spec.round, metrics["success_rate"], len(mine))  # fmt: skip
        results[env_name] = (mine, metrics)
    return results


def run_evaluation(
    config: dict,
    config_hash: str,
    method: str,
    round: int,
    adapters: Mapping[str, str | None],
    outputs: Mapping[str, tuple[str | Path, str | Path]],
    threads: int = 1,
    random_actions: bool = False,
    samples: int = 1,
) -> dict[str, dict]:
    """Evaluate a (method, round) on the environments of ``outputs``; store it.

    ``adapters`` maps each environment to the adapter evaluated on it (None for
    the base model); ``outputs`` maps it to (episodes shard, metrics JSON).
    ``config`` needs experiment, seed, model, generation and those envs.
    With ``random_actions`` no model plays: each turn takes a listed action
    at random (``RandomChoicePolicy``), in the envs that list their actions;
    the others get no episodes (their table cell is empty). ``samples``
    plays each task that many times, each episode with its own seed (for the
    random reference; a greedy model would repeat itself).
    """
    from evoflow.runtime import configure_threads, policy_from_config, rollout_spec

    configure_threads(threads)
    envs = config["envs"]
    split = (config.get("evaluation") or {}).get("split", "test")
    specs = {
        env: rollout_spec(
            config,
            env,
            method=method,
            round=round,
            client=env,
            split=split,
            source="eval",
            adapter=adapters.get(env),
            temperature=0.0,
        )  # fmt: skip
        for env in outputs
    }
    if random_actions:
        specs = {env: replace(spec, constrain_actions=True, samples=samples)
                 for env, spec in specs.items()
                 if envs[env]["remote"] is None and env_class(env).lists_actions}  # fmt: skip
    policy = RandomChoicePolicy() if random_actions else policy_from_config(config)
    try:
        results = evaluate_envs(
            policy, specs, envs, config["generation"]["width"], split
        )
    finally:
        policy.close()
    for env in set(outputs) - set(results):
        results[env] = ([], {"env": env, "method": method, "round": round,
                             "adapter_sha256": None, **episode_metrics([])})  # fmt: skip
    for env, (episodes, metrics) in results.items():
        meta = ShardMeta(experiment=config["experiment"], config_hash=config_hash,
                         model_id=policy.model_id, seed=config["seed"],
                         adapter_sha256=metrics["adapter_sha256"])  # fmt: skip
        episodes_path, metrics_path = outputs[env]
        write_shard(episodes_path, episodes, meta)
        write_json(metrics_path, metrics)
    return {env: metrics for env, (_, metrics) in results.items()}

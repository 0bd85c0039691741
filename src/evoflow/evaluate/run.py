"""Run a policy greedily on an environment's test tasks and store the result."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from evoflow.atomic import write_json
from evoflow.envs import env_factory, split_ids
from evoflow.evaluate.metrics import episode_metrics
from evoflow.policy.adapters import adapter_digest
from evoflow.policy.base import Policy
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.seeding import choose
from evoflow.store import Episode, ShardMeta, write_shard

log = logging.getLogger(__name__)


def eval_tasks(
    env_name: str, count: int | None, seed: int, remote: dict | None = None
) -> list[str]:
    """The evaluated test tasks: the same for every method of an experiment."""
    return choose(split_ids(env_name, "test", remote), count, seed, "test", env_name)


def evaluate_env(
    policy: Policy,
    env_name: str,
    spec: RolloutSpec,
    count: int | None = None,
    remote: dict | None = None,
) -> tuple[list[Episode], dict]:
    """Greedy episodes on ``count`` test tasks (all when None) and their metrics."""
    tasks = eval_tasks(env_name, count, spec.seed, remote)
    digest = adapter_digest(spec.adapter) if spec.adapter else None
    spec = replace(spec, split="test", source="eval", adapter_sha256=digest,
                   sampling=replace(spec.sampling, temperature=0.0))  # fmt: skip
    episodes = rollout(policy, env_factory(env_name, remote), tasks, spec)
    metrics = {"env": env_name, "method": spec.method, "round": spec.round,
               "adapter_sha256": digest, **episode_metrics(episodes)}  # fmt: skip
    log.info("evaluate %s %s round %d: success %.3f over %d episodes", env_name,
             spec.method, spec.round, metrics["success_rate"], len(episodes))  # fmt: skip
    return episodes, metrics


def write_evaluation(
    episodes_path: str | Path,
    metrics_path: str | Path,
    episodes: list[Episode],
    metrics: dict,
    meta: ShardMeta,
) -> None:
    """Store evaluated episodes as a shard and the metrics as JSON."""
    write_shard(episodes_path, episodes, meta)
    write_json(metrics_path, metrics)


def run_evaluation(
    config: dict,
    config_hash: str,
    env_name: str,
    method: str,
    round: int,
    adapter: str | None,
    episodes_path: str | Path,
    metrics_path: str | Path,
    threads: int = 1,
) -> dict:
    """Evaluate one (method, round) on one environment as the config says; store it.

    ``config`` needs the keys experiment, seed, model, generation and
    envs.<env_name>; ``config_hash`` is the whole experiment's (provenance).
    """
    from evoflow.runtime import configure_threads, policy_from_config, rollout_spec

    configure_threads(threads)
    policy = policy_from_config(config)
    env_cfg = config["envs"][env_name]
    spec = rollout_spec(config, env_name, method=method, round=round, client=env_name,
                        split="test", source="eval", adapter=adapter, temperature=0.0)  # fmt: skip
    try:
        episodes, metrics = evaluate_env(
            policy, env_name, spec, env_cfg["test"], env_cfg["remote"]
        )
    finally:
        policy.close()
    meta = ShardMeta(experiment=config["experiment"], config_hash=config_hash,
                     model_id=policy.model_id, seed=config["seed"],
                     adapter_sha256=metrics["adapter_sha256"])  # fmt: skip
    write_evaluation(episodes_path, metrics_path, episodes, metrics, meta)
    return metrics

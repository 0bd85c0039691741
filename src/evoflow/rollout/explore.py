"""Exploration: a client plays training tasks of its own environment.

Tasks are drawn from the training split with a seed of (experiment seed, round,
env) — the same tasks for every method, so methods differ only in the policy.
"""

from __future__ import annotations

import logging
from pathlib import Path

from evoflow.envs import env_factory, split_ids
from evoflow.policy.adapters import adapter_digest
from evoflow.rollout.engine import rollout
from evoflow.seeding import choose
from evoflow.store import ShardInfo, ShardMeta, write_shard

log = logging.getLogger(__name__)


def explore(
    config: dict,
    config_hash: str,
    env_name: str,
    method: str,
    round: int,
    adapter: str | None,
    output: str | Path,
    threads: int = 1,
) -> ShardInfo:
    """Play ``envs.<env>.explore`` training tasks (of ``envs.<env>.strata``, when
    set) at the exploration temperature."""
    from evoflow.runtime import configure_threads, policy_from_config, rollout_spec

    configure_threads(threads)
    env_cfg = config["envs"][env_name]
    train = split_ids(env_name, "train", env_cfg["remote"], env_cfg.get("strata"))
    tasks = choose(train, env_cfg["explore"],
                   config["seed"], "explore", round, env_name)  # fmt: skip
    digest = adapter_digest(adapter) if adapter else None
    spec = rollout_spec(config, env_name, method=method, round=round, client=env_name,
                        split="train", source="explore", adapter=adapter, adapter_sha256=digest)  # fmt: skip
    policy = policy_from_config(config)
    try:
        episodes = rollout(
            policy, env_factory(env_name, env_cfg["remote"]), tasks, spec
        )
    finally:
        policy.close()
    log.info("explore %s %s round %d: %d/%d successful", env_name, method, round,
             sum(e.success for e in episodes), len(episodes))  # fmt: skip
    meta = ShardMeta(experiment=config["experiment"], config_hash=config_hash,
                     model_id=policy.model_id, seed=config["seed"], adapter_sha256=digest)  # fmt: skip
    return write_shard(output, episodes, meta)

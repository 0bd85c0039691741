"""Exploration: clients play training tasks of their own environments.

Tasks are drawn from the training split with a seed of (experiment seed, round,
env) — the same tasks for every method, so methods differ only in the policy.
Clients that explore with the same adapter (every client of a federated round
starts from the global adapter) play in one batch: the model loads once and
every decoding step serves all their episodes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from evoflow.envs import configured_factory, split_ids
from evoflow.policy.adapters import adapter_digest
from evoflow.rollout.engine import Job, play
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
    """One client's exploration (``explore_envs`` with one env)."""
    shards = explore_envs(config, config_hash, method, round, adapter,
                          {env_name: output}, threads)  # fmt: skip
    return shards[env_name]


def explore_envs(
    config: dict,
    config_hash: str,
    method: str,
    round: int,
    adapter: str | None,
    outputs: Mapping[str, str | Path],
    threads: int = 1,
) -> dict[str, ShardInfo]:
    """Play ``envs.<env>.explore`` training tasks (of ``envs.<env>.strata``, when
    set) of every env in ``outputs`` at the exploration temperature, in one
    batch; write each env's episodes to its shard."""
    from evoflow.runtime import configure_threads, policy_from_config, rollout_spec

    configure_threads(threads)
    digest = adapter_digest(adapter) if adapter else None
    jobs, factories = [], {}
    for env_name in outputs:
        env_cfg = config["envs"][env_name]
        train = split_ids(env_name, "train", env_cfg["remote"], env_cfg.get("strata"))
        tasks = choose(train, env_cfg["explore"],
                       config["seed"], "explore", round, env_name)  # fmt: skip
        spec = rollout_spec(config, env_name, method=method, round=round, client=env_name,
                            split="train", source="explore", adapter=adapter,
                            adapter_sha256=digest)  # fmt: skip
        factories[env_name] = configured_factory(env_name, env_cfg)
        jobs += [Job(env_name, t, k, spec) for t in tasks for k in range(spec.samples)]
    policy = policy_from_config(config)
    try:
        # each client keeps the width it would have alone
        width = config["generation"]["width"] * len(outputs)
        episodes = play(policy, factories, jobs, width)
    finally:
        policy.close()
    meta = ShardMeta(experiment=config["experiment"], config_hash=config_hash,
                     model_id=policy.model_id, seed=config["seed"], adapter_sha256=digest)  # fmt: skip
    shards = {}
    for env_name, output in outputs.items():
        mine = [e for e in episodes if e.env == env_name]
        log.info("explore %s %s round %d: %d/%d successful", env_name, method, round,
                 sum(e.success for e in mine), len(mine))  # fmt: skip
        shards[env_name] = write_shard(output, mine, meta)
    return shards

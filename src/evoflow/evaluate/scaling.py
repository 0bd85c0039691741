"""Test-time scaling (AgentGym-RL §5.1): more interaction turns, more samples.

The max-turn sweep (Figure 8) is an ordinary greedy evaluation at each cap
(``run_evaluation`` with the env's ``max_turns`` replaced). Parallel scaling
(Figure 9) plays ``n`` samples of every test task at temperature 1.0 and
reports the unbiased pass@k of Chen et al. (2021),
pass@k = 1 − C(n − c, k) / C(n, k) for a task with ``c`` successes in ``n``
samples, averaged over tasks, for k = 1, 2, 4, … ≤ n.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from evoflow.atomic import write_json
from evoflow.store import Episode, ShardMeta, write_shard


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` of the ``n`` samples succeeded."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def ks_for(n: int) -> list[int]:
    """1, 2, 4, … up to ``n`` (and ``n`` itself)."""
    ks = [2**i for i in range(n.bit_length()) if 2**i <= n]
    return ks if ks[-1] == n else [*ks, n]


def passk_metrics(episodes: list[Episode]) -> dict:
    """Mean pass@k over the tasks of ``episodes`` (same sample count per task)."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for episode in episodes:
        by_task[episode.task_id].append(episode.success)
    counts = {len(v) for v in by_task.values()}
    if len(counts) != 1:
        raise ValueError(f"tasks have different sample counts: {sorted(counts)}")
    n = counts.pop()
    return {
        "tasks": len(by_task),
        "samples": n,
        "pass_at_k": {
            str(k): round(
                sum(pass_at_k(n, sum(v), k) for v in by_task.values()) / len(by_task), 6
            )  # fmt: skip
            for k in ks_for(n)
        },
    }


def run_passk(config: dict, config_hash: str, method: str, round: int,
              adapter: str | None, samples: int,
              outputs: Mapping[str, tuple[str | Path, str | Path]],
              threads: int = 1) -> dict[str, dict]:  # fmt: skip
    """``samples`` episodes of every evaluated test task at temperature 1.0."""
    from evoflow.envs import configured_factory
    from evoflow.evaluate.run import eval_tasks
    from evoflow.policy.adapters import adapter_digest
    from evoflow.rollout.engine import Job, play
    from evoflow.runtime import configure_threads, policy_from_config, rollout_spec

    configure_threads(threads)
    envs = config["envs"]
    digest = adapter_digest(adapter) if adapter else None
    jobs, factories = [], {}
    for env in outputs:
        spec = rollout_spec(config, env, method=method, round=round, client=env,
                            split="test", source="eval", adapter=adapter,
                            adapter_sha256=digest, temperature=1.0, samples=samples)  # fmt: skip
        factories[env] = configured_factory(env, envs[env])
        tasks = eval_tasks(env, envs[env]["test"], config["seed"], envs[env]["remote"],
                           envs[env].get("strata"))  # fmt: skip
        jobs += [Job(env, t, k, spec) for t in tasks for k in range(samples)]
    policy = policy_from_config(config)
    try:
        episodes = play(policy, factories, jobs, config["generation"]["width"])
    finally:
        policy.close()
    results = {}
    for env, (episodes_path, metrics_path) in outputs.items():
        mine = [e for e in episodes if e.env == env]
        metrics = {"env": env, "method": method, "round": round,
                   "adapter_sha256": digest, **passk_metrics(mine)}  # fmt: skip
        meta = ShardMeta(config["experiment"], config_hash, policy.model_id,
                         config["seed"], digest)  # fmt: skip
        write_shard(episodes_path, mine, meta)
        write_json(metrics_path, metrics)
        results[env] = metrics
    return results

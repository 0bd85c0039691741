"""Expert demonstrations: each env's solver played into stored ReAct episodes.

Every demonstration is verified by replaying its actions in a fresh environment
before it is written; an expert that cannot be replayed is a bug and fails loudly.
Only successful demonstrations are kept (they seed every method's buffer).
"""

from __future__ import annotations

import logging
from pathlib import Path

from evoflow.envs import make_env, play_expert, replay
from evoflow.envs.base import Trajectory
from evoflow.rollout.react import format_reply, opening_messages, turn_messages
from evoflow.seeding import choose
from evoflow.store import Episode, ShardInfo, ShardMeta, read_agenttraj, write_shard

log = logging.getLogger(__name__)
EXPERT_MODEL = "expert"


def trajectory_episode(
    trajectory: Trajectory,
    system_prompt: str,
    experiment: str,
    horizon: int,
    seed: int,
) -> Episode:
    """A played trajectory as an ``expert`` episode in the ReAct chat layout."""
    messages = opening_messages(system_prompt, trajectory.first_observation)
    for turn in trajectory.turns:
        messages += turn_messages(
            format_reply(turn.thought, turn.action), turn.result.observation
        )
    finished = bool(trajectory.turns) and trajectory.turns[-1].result.done
    return Episode(
        experiment=experiment,
        method="expert",
        round=0,
        client=trajectory.env,
        env=trajectory.env,
        task_id=trajectory.task_id,
        split="train",
        episode_id=f"expert-{trajectory.env}-{trajectory.task_id}",
        source="expert",
        model_id=EXPERT_MODEL,
        seed=seed,
        temperature=0.0,
        horizon=horizon,
        reward=trajectory.reward,
        success=trajectory.success,
        n_turns=len(trajectory.turns),
        n_tokens=0,
        termination="done" if finished else "max_turns",
        messages=messages,
    )


def expert_demos(
    env_name: str,
    n_tasks: int,
    experiment: str,
    seed: int,
    max_turns: int | None = None,
) -> list[Episode]:
    """Verified successful expert episodes on ``n_tasks`` training tasks."""
    env, fresh = make_env(env_name), make_env(env_name)
    horizon = max_turns or env.max_turns
    tasks = choose(env.task_ids("train"), n_tasks, seed, "demos", env_name)
    episodes = []
    for task in tasks:
        played = play_expert(env, task, horizon)
        again = replay(fresh, task, played.actions)
        if [t.result for t in again.turns] != [t.result for t in played.turns]:
            raise RuntimeError(
                f"{env_name} task {task}: the expert's actions do not replay identically"
            )
        if not played.success:
            log.warning(
                "expert_demos: %s task %s unsolved in %d turns; skipped",
                env_name,
                task,
                horizon,
            )
            continue
        episodes.append(
            trajectory_episode(played, env.system_prompt, experiment, horizon, seed)
        )
    log.info(
        "expert_demos: %s: %d of %d tasks solved", env_name, len(episodes), len(tasks)
    )
    return episodes


def write_demos(
    output: str | Path,
    env_name: str,
    n_tasks: int,
    experiment: str,
    seed: int,
    config_hash: str,
    max_turns: int | None = None,
    demos_file: str | None = None,
) -> ShardInfo:
    """Write the demonstration shard of one environment.

    Demonstrations come from ``demos_file`` (AgentTraj JSON, e.g. AgentGym's data
    for an environment served remotely) when given, else from the env's expert.
    """
    if demos_file:
        episodes = [
            e for e in read_agenttraj(demos_file, experiment) if e.env == env_name
        ]
        if not episodes:
            raise ValueError(f"{demos_file}: no items with item_id '{env_name}_<idx>'")
        episodes = episodes[:n_tasks] if n_tasks else episodes
        model_id = "agenttraj"
    else:
        episodes = expert_demos(env_name, n_tasks, experiment, seed, max_turns)
        model_id = EXPERT_MODEL
    for episode in episodes:
        episode.client = env_name
    meta = ShardMeta(
        experiment=experiment, config_hash=config_hash, model_id=model_id, seed=seed
    )
    return write_shard(output, episodes, meta)

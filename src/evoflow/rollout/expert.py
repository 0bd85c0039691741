"""Expert demonstrations: each env's solver played into stored ReAct episodes.

Every demonstration is verified by replaying its actions in a fresh environment
before it is written; an expert that cannot be replayed is a bug and fails loudly.
Only demonstrations that succeed within the experiment's turn cap are kept (they
seed every method's buffer); each one's horizon is that cap.
"""

from __future__ import annotations

import logging
from pathlib import Path

from evoflow.envs import in_strata, make_env, play_expert, replay
from evoflow.envs.base import Trajectory
from evoflow.envs.formats import reply_format
from evoflow.rollout.react import opening_messages, turn_messages
from evoflow.seeding import choose, py_random
from evoflow.store import Episode, ShardInfo, ShardMeta, read_agenttraj, write_shard

log = logging.getLogger(__name__)
EXPERT_MODEL = "expert"
SPARE_TRIES = 10  # tasks tried per wanted demonstration, at most


def trajectory_episode(
    trajectory: Trajectory,
    system_prompt: str,
    experiment: str,
    horizon: int,
    seed: int,
    reply: str = "react",
) -> Episode:
    """A played trajectory as an ``expert`` episode, replies in format ``reply``."""
    render = reply_format(reply).render
    messages = opening_messages(system_prompt, trajectory.first_observation)
    for turn in trajectory.turns:
        result = turn.result
        messages += turn_messages(
            render(turn.thought, turn.action), result.observation,
            reward=result.reward, valid=result.valid,
        )  # fmt: skip
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
    n_tasks: int | None,
    experiment: str,
    seed: int,
    max_turns: int | None = None,
    strata: list[str] | None = None,
) -> list[Episode]:
    """Verified expert episodes that succeed within the turn cap.

    Parameters
    ----------
    n_tasks
        demonstrations wanted (None: one per training task, tried once each).
        The expert plays ``n_tasks`` training tasks drawn
        with the seed; a task it does not finish successfully within the cap is
        not kept and is replaced by the next task of a seeded order of the
        other training tasks, at most ``SPARE_TRIES`` times ``n_tasks`` tries in
        all (fewer demonstrations are kept, with a warning, when those run out).
    max_turns
        the turn cap (the config's ``envs.<env>.max_turns``; None: the env's
        own), which is also each demonstration's horizon.
    strata
        draw only training tasks of these strata (``envs.<env>.strata``).
    """
    env, fresh = make_env(env_name), make_env(env_name)
    train = env.task_ids("train")
    if strata is not None:
        train = in_strata(env_name, train, strata, f"envs.{env_name}.strata")
    try:
        return _verified_demos(env, fresh, train, n_tasks, experiment, seed, max_turns)
    finally:
        env.close()
        fresh.close()


def _verified_demos(env, fresh, train: list[str], n_tasks: int | None,
                    experiment: str, seed: int, max_turns: int | None) -> list[Episode]:  # fmt: skip
    env_name = env.name
    horizon = max_turns or env.max_turns
    n_tasks = len(train) if n_tasks is None else n_tasks
    episodes, tried = [], 0
    for task in _candidate_tasks(train, n_tasks, seed, env_name):
        if len(episodes) == n_tasks or tried == SPARE_TRIES * n_tasks:
            break
        tried += 1
        played = play_expert(env, task, horizon)
        again = replay(fresh, task, played.actions)
        if [t.result for t in again.turns] != [t.result for t in played.turns]:
            raise RuntimeError(
                f"{env_name} task {task}: the expert's actions do not replay identically"
            )
        if played.success:
            episodes.append(
                trajectory_episode(
                    played,
                    env.system_prompt,
                    experiment,
                    horizon,
                    seed,
                    env.reply_format,
                )  # fmt: skip
            )
        else:
            log.info(
                "expert_demos: %s task %s unsolved in %d turns", env_name, task, horizon
            )
    if len(episodes) < n_tasks:
        log.warning(
            "expert_demos: %s: only %d of %d demonstrations finish within %d turns "
            "(%d tasks tried)",
            env_name,
            len(episodes),
            n_tasks,
            horizon,
            tried,
        )
    log.info(
        "expert_demos: %s: %d demonstrations from %d tasks",
        env_name,
        len(episodes),
        tried,
    )
    return episodes


def _candidate_tasks(tasks: list[str], n: int, seed: int, env_name: str):
    """The ``n`` seeded training tasks, then the others in a seeded order."""
    chosen = choose(tasks, n, seed, "demos", env_name)
    yield from chosen
    taken = set(chosen)
    spare = [task for task in tasks if task not in taken]
    py_random(seed, "demos-spare", env_name).shuffle(spare)
    yield from spare


def write_demos(
    output: str | Path,
    env_name: str,
    n_tasks: int | None,
    experiment: str,
    seed: int,
    config_hash: str,
    max_turns: int | None = None,
    demos_file: str | None = None,
    strata: list[str] | None = None,
) -> ShardInfo:
    """Write the demonstration shard of one environment.

    Demonstrations come from ``demos_file`` (AgentTraj JSON, e.g. AgentGym's data
    for an environment served remotely) when given, else from the env's expert.
    Either way none has more turns than ``max_turns`` (when given).
    """
    if demos_file:
        episodes = file_demos(demos_file, env_name, n_tasks, experiment, max_turns)
        model_id = "agenttraj"
    else:
        episodes = expert_demos(env_name, n_tasks, experiment, seed, max_turns, strata)
        model_id = EXPERT_MODEL
    for episode in episodes:
        episode.client = env_name
    meta = ShardMeta(
        experiment=experiment, config_hash=config_hash, model_id=model_id, seed=seed
    )
    return write_shard(output, episodes, meta)


def file_demos(
    demos_file: str,
    env_name: str,
    n_tasks: int | None,
    experiment: str,
    max_turns: int | None = None,
) -> list[Episode]:
    """The first ``n_tasks`` (0 or None: all) AgentTraj items of ``env_name`` that fit the cap.

    Items with more trained turns than ``max_turns`` are left out; the kept ones
    get the cap as their horizon.
    """
    episodes = [e for e in read_agenttraj(demos_file, experiment) if e.env == env_name]
    if not episodes:
        raise ValueError(f"{demos_file}: no items with item_id '{env_name}_<idx>'")
    if max_turns:
        fitting = [e for e in episodes if e.n_turns <= max_turns]
        if len(fitting) < len(episodes):
            log.info(
                "file_demos: %s: %d of %d items exceed %d turns; left out",
                env_name,
                len(episodes) - len(fitting),
                len(episodes),
                max_turns,
            )
        episodes = fitting
        for episode in episodes:
            episode.horizon = max_turns
    return episodes[:n_tasks] if n_tasks else episodes

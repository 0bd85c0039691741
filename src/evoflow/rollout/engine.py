"""The rollout engine: many episodes at once, one batched generation per turn.

Each turn, every live episode's chat goes to the policy in one ``generate`` call
(with the episode id as cache key, so backends can reuse the shared prefix), the
replies are parsed, and the environments step — in parallel threads when they
are remote. Finished episodes leave the batch and waiting tasks take their place
until ``width`` episodes are live again.

Termination reasons: ``done`` (the env ended the episode), ``max_turns`` (the
horizon was reached), ``context`` (the next prompt would not fit the model's
context window — the episode stops rather than forgetting turns, so every stored
episode is exactly what the model saw), ``error`` (the environment failed, e.g.
its server died), ``invalid`` (``max_invalid`` unusable replies in a row).

Randomness: the reply of episode ``e`` at turn ``t`` is sampled with seed
``derive_seed(seed, e, t)``, so runs with the same seed are identical on CPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from evoflow.envs.base import EnvError, Step, TextEnv
from evoflow.policy.base import Generation, Policy, PolicyError, SamplingParams
from evoflow.rollout.react import opening_messages, parse_reply, turn_messages
from evoflow.seeding import derive_seed
from evoflow.store.schema import Episode, Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutSpec:
    """What to play and how.

    Attributes
    ----------
    experiment, method, round, client, split, source
        labels written into every episode.
    seed
        root of the per-(episode, turn) sampling seeds.
    horizon
        maximum turns per episode (None: the env's default cap).
    width
        episodes played at once (the generation batch).
    max_invalid
        consecutive unusable replies that end an episode (None: never).
    samples
        episodes per task (e.g. 8 for GRPO groups).
    """

    experiment: str
    method: str
    split: str
    source: str
    round: int = 0
    client: str | None = None
    seed: int = 0
    horizon: int | None = None
    width: int = 16
    max_invalid: int | None = None
    samples: int = 1
    adapter: str | None = None
    adapter_sha256: str | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)


@dataclass
class _Live:
    """An episode in progress."""

    episode_id: str
    task_id: str
    sample: int
    env: TextEnv
    messages: list[Message]
    horizon: int
    turns: int = 0
    reward: float = 0.0
    tokens: int = 0
    invalid: int = 0
    invalid_streak: int = 0
    success: bool = False
    termination: str | None = None


def rollout(
    policy: Policy,
    env_factory: Callable[[], TextEnv],
    task_ids: Sequence[str],
    spec: RolloutSpec,
    progress: bool = True,
) -> list[Episode]:
    """Play every task (``spec.samples`` times) and return the finished episodes.

    Episodes come back in task order (then sample order), whatever order they
    finished in.
    """
    waiting = [(task, k) for task in task_ids for k in range(spec.samples)]
    order = {pair: i for i, pair in enumerate(waiting)}
    waiting.reverse()  # pop() from the end keeps task order
    finished: list[_Live] = []
    live: list[_Live] = []
    idle: list[TextEnv] = []
    made: list[TextEnv] = []
    bar = tqdm(total=len(waiting), desc=f"{spec.method} {spec.client or ''} {spec.split}",
               disable=not progress, unit="ep", dynamic_ncols=True)  # fmt: skip
    pool = ThreadPoolExecutor(max_workers=max(1, spec.width))
    try:
        while waiting or live:
            starts = []
            while waiting and len(live) + len(starts) < spec.width:
                if not idle:
                    made.append(env_factory())
                    idle.append(made[-1])
                starts.append((idle.pop(), *waiting.pop()))
            live += list(pool.map(lambda s: _start(*s, spec), starts))
            if all(e.termination is None for e in live):
                _turn(policy, live, spec, pool)
            ended = [e for e in live if e.termination is not None]
            for episode in ended:
                live.remove(episode)
                idle.append(episode.env)
                finished.append(episode)
            bar.update(len(ended))
            policy.forget([e.episode_id for e in ended])
    finally:
        pool.shutdown(wait=True)
        bar.close()
        for env in made:
            if hasattr(env, "close"):
                env.close()
    finished.sort(key=lambda e: order[(e.task_id, e.sample)])
    return [_to_episode(e, spec, policy.model_id) for e in finished]


def _start(env: TextEnv, task: str, sample: int, spec: RolloutSpec) -> _Live:
    episode_id = "/".join(
        [spec.experiment, spec.method, f"r{spec.round}", spec.client or "-", spec.split,
         env.name, str(task), str(sample)]
    )  # fmt: skip
    horizon = spec.horizon or env.max_turns
    try:
        first = env.reset(task)
    except EnvError as exc:
        log.warning("rollout: reset of %s task %s failed: %s", env.name, task, exc)
        return _Live(episode_id, task, sample, env, [], horizon, termination="error")
    messages = opening_messages(env.system_prompt, first)
    return _Live(episode_id, task, sample, env, messages, horizon)


def _turn(
    policy: Policy, live: list[_Live], spec: RolloutSpec, pool: ThreadPoolExecutor
) -> None:
    chats = [[{"role": m.role, "content": m.content} for m in e.messages] for e in live]
    seeds = [derive_seed(spec.seed, e.episode_id, e.turns) for e in live]
    keys = [e.episode_id for e in live]
    replies = _generate(policy, chats, spec, seeds, keys)
    steps = (
        list(pool.map(_act, live, replies))
        if len(live) > 1
        else [_act(live[0], replies[0])]
    )
    for episode, reply, step in zip(live, replies, steps, strict=True):
        _record(episode, reply, step, spec)


def _generate(
    policy: Policy, chats, spec: RolloutSpec, seeds, keys
) -> list[Generation]:
    """One batched generation; a backend failure is retried once, then raised."""
    for attempt in (1, 2):
        try:
            return policy.generate(chats, spec.sampling, spec.adapter, seeds, keys)
        except PolicyError as exc:
            if attempt == 2:
                raise PolicyError(
                    f"generation failed twice for a batch of {len(chats)} chats "
                    f"({spec.method}, round {spec.round}, {spec.client}): {exc}"
                ) from exc
            log.warning("rollout: generation failed (%s); retrying once", exc)
    raise AssertionError("unreachable")


def _act(episode: _Live, reply: Generation) -> Step | EnvError | None:
    """Step the env with the reply's action (None when the prompt did not fit)."""
    if reply.finish == "context":
        return None
    parsed = parse_reply(reply.text) if reply.finish != "length" else None
    try:
        if parsed is None:
            return episode.env.invalid_reply(
                "the reply was cut off at the length limit"
            )
        if parsed.action is None:
            return episode.env.invalid_reply(parsed.problem or "no action")
        return episode.env.step(parsed.action)
    except EnvError as exc:
        return exc


def _record(episode: _Live, reply: Generation, step, spec: RolloutSpec) -> None:
    if step is None:
        episode.termination = "context"
        return
    episode.turns += 1
    episode.tokens += reply.completion_tokens
    if isinstance(step, EnvError):
        log.warning("rollout: %s task %s: %s", episode.env.name, episode.task_id, step)
        episode.messages += turn_messages(reply.text, None)
        episode.termination = "error"
        return
    episode.messages += turn_messages(reply.text, step.observation)
    episode.reward += step.reward
    episode.invalid += not step.valid
    episode.invalid_streak = 0 if step.valid else episode.invalid_streak + 1
    if step.done:
        episode.success = step.success
        episode.termination = "done"
    elif spec.max_invalid is not None and episode.invalid_streak >= spec.max_invalid:
        episode.termination = "invalid"
    elif episode.turns >= episode.horizon:
        episode.termination = "max_turns"


def _to_episode(live: _Live, spec: RolloutSpec, model_id: str) -> Episode:
    return Episode(
        experiment=spec.experiment,
        method=spec.method,
        round=spec.round,
        client=spec.client,
        env=live.env.name,
        task_id=live.task_id,
        split=spec.split,
        episode_id=live.episode_id,
        source=spec.source,
        model_id=model_id,
        adapter_sha256=spec.adapter_sha256,
        seed=spec.seed,
        temperature=spec.sampling.temperature,
        horizon=live.horizon,
        reward=live.reward,
        success=live.success,
        n_turns=live.turns,
        n_invalid=live.invalid,
        n_tokens=live.tokens,
        termination=live.termination or "error",
        messages=live.messages,
    )

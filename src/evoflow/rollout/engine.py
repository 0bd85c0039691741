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
``derive_seed(seed, k, t)``, where ``k`` is the episode's id without its method
(``sampling_key``), so runs with the same seed are identical on CPU and two
methods that play one task with the same policy (Fed-SE and an ablation in round
1, say) sample the same episode: methods are paired, not merely seeded alike.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from tqdm import tqdm

from evoflow.envs.base import EnvError, Step, TextEnv
from evoflow.envs.formats import reply_format
from evoflow.policy.base import (
    FRAMES,
    ActionChoice,
    Generation,
    Policy,
    PolicyError,
    SamplingParams,
)
from evoflow.rollout.react import opening_messages, turn_messages
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
    reply_format
        how replies are parsed (``evoflow.envs.formats``); None: each env's own.
    constrain_actions
        decode each action from the env's ``action_choices()`` and
        ``action_slots()`` (the thought stays free, and so does a slot's text:
        ``evoflow.policy.constrain``) where the env lists them and the reply
        format has a one-line action; elsewhere replies are free.
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
    reply_format: str | None = None
    constrain_actions: bool = False

    def __post_init__(self) -> None:
        if self.reply_format is not None:
            reply_format(self.reply_format)  # an unknown name fails here, named


@dataclass(frozen=True)
class Job:
    """One episode to play: which env (a key of the factories), task, sample."""

    env: str
    task: str
    sample: int
    spec: RolloutSpec


@dataclass
class _Live:
    """An episode in progress."""

    episode_id: str
    job: Job
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
    """Play every task (``spec.samples`` times) of one environment."""
    jobs = [Job("env", task, k, spec) for task in task_ids for k in range(spec.samples)]
    return play(policy, {"env": env_factory}, jobs, spec.width, progress)


def play(
    policy: Policy,
    factories: dict[str, Callable[[], TextEnv]],
    jobs: Sequence[Job],
    width: int = 16,
    progress: bool = True,
) -> list[Episode]:
    """Play many jobs — possibly of several environments — sharing the batch.

    Each turn, live episodes with the same sampling settings form one
    ``generate`` call, even when they use different adapters. Episodes come back in job order,
    whatever order they finished in.
    """
    order = {id(job): i for i, job in enumerate(jobs)}
    waiting = list(reversed(jobs))  # pop() from the end keeps job order
    finished: list[_Live] = []
    live: list[_Live] = []
    idle: dict[str, list[TextEnv]] = {key: [] for key in factories}
    made: list[TextEnv] = []
    first = jobs[0].spec if jobs else None
    label = f"{first.method} r{first.round} {first.source}" if first else "rollout"
    bar = tqdm(
        total=len(jobs), desc=label, disable=not progress, unit="ep", dynamic_ncols=True
    )
    pool = ThreadPoolExecutor(max_workers=max(1, width))
    try:
        while waiting or live:
            starts = []
            while waiting and len(live) + len(starts) < width:
                job = waiting.pop()
                if not idle[job.env]:
                    made.append(factories[job.env]())
                    idle[job.env].append(made[-1])
                starts.append((idle[job.env].pop(), job))
            live += list(pool.map(lambda start: _start(*start), starts))
            if all(e.termination is None for e in live):
                _turn(policy, live, pool)
            ended = [e for e in live if e.termination is not None]
            for episode in ended:
                live.remove(episode)
                idle[episode.job.env].append(episode.env)
                finished.append(episode)
            bar.update(len(ended))
            policy.forget([e.episode_id for e in ended])
    finally:
        pool.shutdown(wait=True)
        bar.close()
        for env in made:
            env.close()
    finished.sort(key=lambda e: order[id(e.job)])
    return [_to_episode(e, policy.model_id) for e in finished]


def sampling_key(job: Job, env: str) -> str:
    """What an episode's sampling seeds derive from: its round, client, split,
    env, task and sample, and not its method (see the module docstring)."""
    spec = job.spec
    return "/".join([f"r{spec.round}", spec.client or "-", spec.split, env,
                     str(job.task), str(job.sample)])  # fmt: skip


def _start(env: TextEnv, job: Job) -> _Live:
    spec = job.spec
    episode_id = "/".join([spec.experiment, spec.method, sampling_key(job, env.name)])
    horizon = spec.horizon or env.max_turns
    try:
        first = env.reset(job.task)
        prompt = env.prompt_for(spec.reply_format or env.reply_format)
    except EnvError as exc:
        log.warning("rollout: reset of %s task %s failed: %s", env.name, job.task, exc)
        return _Live(episode_id, job, env, [], horizon, termination="error")
    return _Live(episode_id, job, env, opening_messages(prompt, first), horizon)


def _turn(policy: Policy, live: list[_Live], pool: ThreadPoolExecutor) -> None:
    groups: dict[SamplingParams, list[_Live]] = {}
    for episode in live:  # rows may mix adapters; sampling settings are per call
        groups.setdefault(_sampling(episode), []).append(episode)
    for params, members in groups.items():
        chats = [
            [{"role": m.role, "content": m.content} for m in e.messages]
            for e in members
        ]
        seeds = [derive_seed(e.job.spec.seed, sampling_key(e.job, e.env.name), e.turns)
                 for e in members]  # fmt: skip
        keys = [e.episode_id for e in members]
        adapters = [e.job.spec.adapter for e in members]
        spec = members[0].job.spec
        choices = [_choice(e) for e in members]
        replies = _generate(policy, chats, spec, params, adapters, seeds, keys, choices)
        if len(members) > 1:
            steps = list(pool.map(_act, members, replies))
        else:
            steps = [_act(members[0], replies[0])]
        for episode, reply, step in zip(members, replies, steps, strict=True):
            _record(episode, reply, step)


def _choice(episode: _Live) -> ActionChoice | None:
    """The listed actions and slots this turn's reply is decoded from, if
    constrained."""
    spec = episode.job.spec
    form = spec.reply_format or episode.env.reply_format
    if not spec.constrain_actions or form not in FRAMES:
        return None
    actions = tuple(episode.env.action_choices() or ())
    slots = tuple(episode.env.action_slots())
    return ActionChoice(actions, form, slots) if actions or slots else None


def _sampling(episode: _Live) -> SamplingParams:
    """The spec's sampling, rendered with the reply format's template options."""
    spec = episode.job.spec
    template = reply_format(spec.reply_format or episode.env.reply_format).chat_template
    return replace(spec.sampling, template=template)


def _generate(
    policy: Policy,
    chats,
    spec: RolloutSpec,
    params: SamplingParams,
    adapters,
    seeds,
    keys,
    choices,
) -> list[Generation]:
    """One batched generation; a backend failure is retried once, then raised."""
    extra = {"choices": choices} if any(c is not None for c in choices) else {}
    for attempt in (1, 2):
        try:
            return policy.generate(chats, params, adapters, seeds, keys, **extra)
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
    name = episode.job.spec.reply_format or episode.env.reply_format
    form = reply_format(name)
    cut = reply.finish == "length" and form.needs_whole_reply
    parsed = None if cut else form.parse(reply.text)
    try:
        if parsed is None:
            return episode.env.invalid_reply(
                "the reply was cut off at the length limit", name
            )
        if parsed.action is None:
            return episode.env.invalid_reply(parsed.problem or "no action", name)
        return episode.env.step(parsed.action)
    except EnvError as exc:
        return exc


def _record(episode: _Live, reply: Generation, step) -> None:
    if step is None:
        episode.termination = "context"
        return
    episode.turns += 1
    episode.tokens += reply.completion_tokens
    generated = {"token_ids": reply.token_ids, "logprobs": reply.logprobs}
    if isinstance(step, EnvError):
        log.warning("rollout: %s task %s: %s", episode.env.name, episode.job.task, step)
        episode.messages += turn_messages(reply.text, None, **generated)
        episode.termination = "error"
        return
    episode.messages += turn_messages(
        reply.text, step.observation, **generated, reward=step.reward, valid=step.valid
    )
    episode.reward += step.reward
    episode.invalid += not step.valid
    episode.invalid_streak = 0 if step.valid else episode.invalid_streak + 1
    max_invalid = episode.job.spec.max_invalid
    if step.done:
        episode.success = step.success
        episode.termination = "done"
    elif max_invalid is not None and episode.invalid_streak >= max_invalid:
        episode.termination = "invalid"
    elif episode.turns >= episode.horizon:
        episode.termination = "max_turns"


def _to_episode(live: _Live, model_id: str) -> Episode:
    spec = live.job.spec
    return Episode(
        experiment=spec.experiment,
        method=spec.method,
        round=spec.round,
        client=spec.client,
        env=live.env.name,
        task_id=live.job.task,
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
        # the samples of one task form a group (GRPO-style) within the shard
        group=f"{live.env.name}:{live.job.task}" if spec.samples > 1 else None,
        sample=live.job.sample,
    )

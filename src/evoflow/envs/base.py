"""The text-environment contract every evoflow environment implements.

An environment is a stateful game played in text: ``reset(task_id)`` starts the
task and returns the first observation (which states the task), ``step(action)``
applies one action. The agent answers in the env's reply format
(``evoflow.envs.formats``; ReAct by default); the rollout extracts the action
and hands only that to ``step``.

Every environment also knows how to play itself: ``expert_action()`` returns a
short thought and the exact action an expert takes in the current state. Experts
seed every method with demonstrations, and solving the test split with the
expert is how environment and solver are validated together.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

from evoflow.envs.formats import reply_format
from evoflow.provenance import REPO_ROOT

SPLITS_DIR = REPO_ROOT / "data" / "splits"
SPLITS = ("train", "validation", "test")

REPLY_FORMAT = reply_format("react").instructions  # the default format's words


@dataclass(frozen=True)
class Step:
    """Outcome of one action.

    ``valid`` is False when the action was not understood (the turn still counts).
    """

    observation: str
    reward: float
    done: bool
    success: bool
    valid: bool = True


class EnvError(Exception):
    """The environment was used out of order (e.g. ``step`` before ``reset``)."""


class TaskError(EnvError, KeyError):
    """A task id that the environment does not define."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class TextEnv(ABC):
    """Base class of all text environments.

    Subclasses set ``name``, ``max_turns`` (the default turn cap) and
    ``instructions`` (rules and action syntax, in our words), and implement
    ``reset``, ``step``, ``expert_action`` and ``build_splits``.
    """

    name: ClassVar[str]
    max_turns: ClassVar[int]
    instructions: ClassVar[str]
    reply_format: ClassVar[str] = "react"
    lists_actions: ClassVar[bool] = False  # action_choices() always lists them

    @property
    def system_prompt(self) -> str:
        """Rules of the environment followed by its reply format's instructions."""
        return self.prompt_for(self.reply_format)

    def prompt_for(self, format_name: str) -> str:
        """The system prompt when replies are asked for in ``format_name``."""
        return f"{self.instructions}\n\n{reply_format(format_name).instructions}"

    # --- tasks -------------------------------------------------------------

    def task_ids(self, split: str) -> list[str]:
        """Task ids of a split, read from ``data/splits/<name>.json``."""
        if split not in SPLITS:
            raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
        return list(load_splits(self.name)[split])

    @classmethod
    def stratum(cls, task_id: str) -> str:
        """The group a task belongs to when a subset of a split is drawn
        stratified (e.g. BabyAI's level family, TextCraft's crafting depth)."""
        return "all"

    @classmethod
    def subset(cls, task_id: str) -> str:
        """A finer group than the stratum where the env has one (BabyAI's level
        name); the stratum otherwise."""
        return cls.stratum(task_id)

    @classmethod
    def content_key(cls, task_id: str) -> str:
        """What a task is in substance, so that two ids of one task are caught.

        The default is the id itself; an env where two ids can play the same
        game (TextCraft's distractor variants of one goal, WebShop's repeated
        instructions) overrides it. No two splits may share a key."""
        return str(task_id)

    @classmethod
    @abstractmethod
    def build_splits(cls) -> dict[str, list[str]]:
        """Deterministically list the task ids of every split in ``SPLITS``
        (train, validation, test), pairwise disjoint by id and ``content_key``."""

    # --- playing -----------------------------------------------------------

    def reset(self, task_id: str) -> str:
        """Start task ``task_id``; return the first observation, task included.

        Raises ``TaskError`` for an unknown id.
        """
        observation = self._reset(str(task_id))
        self._running = True
        self._observation = observation
        return observation

    def step(self, action: str) -> Step:
        """Apply one action (the text after ``Action:``).

        Raises ``EnvError`` when no task is running or the episode is over.
        """
        self._check_running()
        result = self._step(action)
        self._observation = result.observation
        self._running = not result.done
        return result

    def invalid_reply(self, reason: str, format_name: str | None = None) -> Step:
        """Observation for a reply with no usable action; the state is unchanged.
        It closes with how to reply in ``format_name`` (default: the env's)."""
        self._check_running()
        return Step(
            observation=f"Your reply could not be used: {reason}. "
            + reply_format(format_name or self.reply_format).retry_hint,
            reward=0.0,
            done=False,
            success=False,
            valid=False,
        )

    @property
    def observation(self) -> str:
        """The latest observation."""
        if not hasattr(self, "_observation"):
            raise EnvError(f"{self.name}: no observation before reset(task_id)")
        return self._observation

    @property
    def running(self) -> bool:
        """True between ``reset`` and the step that ends the episode."""
        return getattr(self, "_running", False)

    def available_actions(self) -> list[str]:
        """Actions that make sense now (empty when the action space is open)."""
        return []

    def action_choices(self) -> list[str] | None:
        """Every well-formed action now, where the env can enumerate them
        (constrained decoding and the random baseline choose among these);
        None where the action space is open (a search query, free text).
        Envs that always can set ``lists_actions`` and list them in
        ``available_actions``."""
        return (self.available_actions() or None) if self.lists_actions else None

    def action_slots(self) -> list[str]:
        """Openings of actions whose rest is free text closed by ``]`` (WebShop's
        ``search[``), which constrained decoding follows with the query left
        free; empty where there are none."""
        return []

    def close(self) -> None:
        """Release what the environment holds (a server session, a simulator);
        nothing for in-process games."""
        return None

    @abstractmethod
    def expert_action(self) -> tuple[str, str]:
        """(thought, action) an expert takes in the current state."""

    @abstractmethod
    def _reset(self, task_id: str) -> str:
        """Set up the task and return its first observation."""

    @abstractmethod
    def _step(self, action: str) -> Step:
        """Apply an action to a running episode."""

    def _check_running(self) -> None:
        if not self.running:
            raise EnvError(
                f"{self.name}: no running episode; call reset(task_id) first"
            )


def splits_path(name: str) -> Path:
    return SPLITS_DIR / f"{name}.json"


@cache
def load_splits(name: str) -> dict[str, tuple[str, ...]]:
    """The committed split file of an environment."""
    path = splits_path(name)
    try:
        payload = json.loads(path.read_text())
    except OSError:
        raise FileNotFoundError(
            f"{path}: split file missing; regenerate with `evoflow make-splits`"
        ) from None
    return {split: tuple(payload["splits"][split]) for split in SPLITS}


@dataclass(frozen=True)
class Turn:
    """One expert (or replayed) turn: what was thought, done and observed."""

    thought: str
    action: str
    result: Step


@dataclass(frozen=True)
class Trajectory:
    """A played episode: the first observation and every turn after it."""

    env: str
    task_id: str
    first_observation: str
    turns: tuple[Turn, ...]

    @property
    def success(self) -> bool:
        return bool(self.turns) and self.turns[-1].result.success

    @property
    def reward(self) -> float:
        return sum(t.result.reward for t in self.turns)

    @property
    def actions(self) -> list[str]:
        return [t.action for t in self.turns]


def play_expert(env: TextEnv, task_id: str, max_turns: int | None = None) -> Trajectory:
    """Let the environment's expert play ``task_id`` for at most ``max_turns``."""
    cap = max_turns or env.max_turns
    first = env.reset(task_id)
    turns = []
    while env.running and len(turns) < cap:
        thought, action = env.expert_action()
        turns.append(Turn(thought, action, env.step(action)))
    return Trajectory(env.name, str(task_id), first, tuple(turns))


def replay(env: TextEnv, task_id: str, actions: list[str]) -> Trajectory:
    """Play a fixed action sequence from a fresh reset (to verify demonstrations)."""
    first = env.reset(task_id)
    turns = []
    for action in actions:
        if not env.running:
            break
        turns.append(Turn("", action, env.step(action)))
    return Trajectory(env.name, str(task_id), first, tuple(turns))

"""SciWorld: elementary-science tasks in the ScienceWorld simulator (PyPI ``scienceworld``).

Description
-----------
The simulator (a JVM, see :mod:`evoflow.envs.sciworld_sim`) models rooms,
objects, substances, electricity and living things; a task asks for an
experiment such as boiling water or finding a living thing and moving it to a
box. Needs Java 17 on PATH.

Task ids follow AgentGym's server: ``data_idx`` ``i`` is the ``i``-th game of the
list that takes the simulator's tasks in its own order ("1-1" boil, "1-2" melt,
...), leaves out the seven AgentGym leaves out (5-1, 5-2, 9-1, 9-2, 9-3, 10-1,
10-2: plant growing, inclined planes, Mendelian genetics) and lists every
variation of each task: 4,639 games, id 0 is boil variation 0, id 30 melt
variation 0, id 120 use-thermometer variation 0. Each game loads with no
simplifications, as AgentGym's does.

Splits: AgentGym's AgentEval ids are a hub dataset, not reachable offline, so
the splits follow ScienceWorld's own variation splits. The training split is
every training variation of the 23 tasks (2,312 ids; AgentGym's SciWorld has
2,320 instructions); the test split is 200 of the simulator's test variations,
one of each task and the other 177 stratified by task, with a fixed seed; the
validation split is 200 of its dev variations (1,156 in all), drawn the same
way with another seed. A task is its (task, variation) pair (``content_key``),
one per id. To evaluate on AgentEval's ids, serve the env and give them as
``envs.sciworld.remote.test_ids`` (``protocol: agentgym``).

Observation
-----------
The first observation is the task description and then what ``look around``
shows, as AgentGym's reset does. Each action returns the simulator's text; an
action it does not understand ("No known action matches that input.") is
reported with ``valid=False``.

Rewards and termination
-----------------------
The simulator scores a task 0-100 as its subgoals are met and -100 when the task
is failed (e.g. focusing on the wrong object). Step rewards are the change of
the score clipped below at 0, divided by 100, so an episode's reward is its
final score / 100 (AgentGym's SciWorld "reward"); success is a score of 100, as
AgentGym defines it. The episode ends on success or failure; AgentGym caps it
at 30 turns.

Expert
------
The simulator's own gold action sequence, generated when the expert is first
asked in an episode, each action with a short templated thought. Gold paths of
a few tasks (boiling, melting, some measurements) run past 30 actions, so the
expert solves 140 of the 200 test tasks within the cap (199 uncapped; id 22, a
boiling task, not even in 150 actions).
"""

from __future__ import annotations

from functools import cache
from typing import ClassVar

from evoflow.envs.base import EnvError, Step, TaskError, TextEnv
from evoflow.envs.sciworld_sim import POOL, Simulator
from evoflow.seeding import choose, choose_stratified

AGENTGYM_EXCLUDED = frozenset({"5-1", "5-2", "9-1", "9-2", "9-3", "10-1", "10-2"})
TEST_SIZE = 200
VALIDATION_SIZE = 200
INVALID = "No known action matches that input."

ACTIONS = (
    "look around | look at OBJ | look in OBJ | inventory | task | wait | wait1",
    "open OBJ | close OBJ | activate OBJ | deactivate OBJ",
    "pick up OBJ | put down OBJ | move OBJ to OBJ | pour OBJ into OBJ | mix OBJ",
    "go to LOC | teleport to LOC | focus on OBJ | use OBJ on OBJ",
    "connect OBJ to OBJ | disconnect OBJ | read OBJ | eat OBJ | flush OBJ",
    "dunk OBJ into OBJ | heat OBJ | cool OBJ | reset task",
)


@cache
def games() -> tuple[tuple[str, int], ...]:
    """(task name, variation) of every AgentGym ``data_idx``, in id order."""
    with POOL.leased() as simulator:
        listing = []
        for task_id, name in simulator.task_names().items():
            if task_id not in AGENTGYM_EXCLUDED:
                count = simulator.max_variations(name)
                listing += [(name, v) for v in range(count)]
    return tuple(listing)


@cache
def _first_ids() -> dict[str, int]:
    first: dict[str, int] = {}
    for i, (name, _) in enumerate(games()):
        first.setdefault(name, i)
    return first


def game_for(task_id: str) -> tuple[str, int]:
    try:
        index = int(task_id)
        if index < 0:
            raise IndexError
        return games()[index]
    except (ValueError, IndexError):
        raise TaskError(
            f"sciworld: unknown task id {task_id!r} (ids are 0-{len(games()) - 1})"
        ) from None


def task_id_for(name: str, variation: int) -> str:
    return str(_first_ids()[name] + variation)


class SciWorldEnv(TextEnv):
    """One ScienceWorld game at a time; the simulator comes from the shared pool."""

    name: ClassVar[str] = "sciworld"
    max_turns: ClassVar[int] = 30
    instructions: ClassVar[str] = (
        "You are an agent in a simulated house with rooms, objects, substances, "
        "devices and living things, and you carry out the science task you are "
        "given. Observations tell you what you see and what your actions did. "
        "Focus (`focus on OBJ`) only on what the task asks you to focus on: "
        "focusing on the wrong thing fails the task. When an action matches "
        "several objects you are asked to choose one by its number.\n"
        "Actions (OBJ is an object, LOC a room):\n" + "\n".join(ACTIONS)
    )

    def __init__(self) -> None:
        self._simulator: Simulator | None = None
        self._game: tuple[str, int] | None = None
        self.task_description = self.look_observation = ""
        self._score = 0
        self._taken: list[str] = []
        self._gold: list[str] | None = None

    @classmethod
    def stratum(cls, task_id: str) -> str:
        """The ScienceWorld task (boil, find-animal, ...)."""
        return game_for(task_id)[0]

    @classmethod
    def content_key(cls, task_id: str) -> str:
        """The ScienceWorld task and variation (``boil/variation 3``)."""
        name, variation = game_for(task_id)
        return f"{name}/variation {variation}"

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        train = []
        held: dict[str, dict[str, list[str]]] = {"test": {}, "dev": {}}
        games()  # lists the ids before the simulator below is taken
        with POOL.leased() as simulator:
            for task_id, name in simulator.task_names().items():
                if task_id in AGENTGYM_EXCLUDED:
                    continue
                variations = simulator.variations(name)
                train += [task_id_for(name, v) for v in variations["train"]]
                for kind, by_task in held.items():
                    by_task[name] = [task_id_for(name, v) for v in variations[kind]]
        return {
            "test": cls._held_out(held["test"], TEST_SIZE, "test"),
            "train": sorted(train, key=int),
            "validation": cls._held_out(held["dev"], VALIDATION_SIZE, "validation"),
        }

    @classmethod
    def _held_out(
        cls, by_task: dict[str, list[str]], size: int, split: str
    ) -> list[str]:
        """``size`` ids: one of each task, the rest stratified by task."""
        first, pool = [], []
        for name, ids in by_task.items():
            one = choose(ids, 1, "sciworld", split, name)
            first += one
            pool += [i for i in ids if i not in one]
        rest = choose_stratified(
            pool, size - len(first), cls.stratum, "sciworld", split
        )
        return sorted(first + rest, key=int)

    # --- playing -----------------------------------------------------------

    @property
    def simulator(self) -> Simulator:
        if self._simulator is None:
            self._simulator = POOL.lease()
        return self._simulator

    def _reset(self, task_id: str) -> str:
        self._game = game_for(task_id)
        self.task_description = self.simulator.load(*self._game)
        self.look_observation = self.simulator.step("look around").observation
        self._score, self._taken, self._gold = 0, [], None
        return f"{self.task_description}\n\n{self.look_observation}"

    def _step(self, action: str) -> Step:
        outcome = self.simulator.step(action.strip())
        self._taken.append(action.strip())
        previous, self._score = self._score, outcome.score
        success = outcome.score >= 100
        return Step(
            observation=outcome.observation,
            reward=(max(outcome.score, 0) - max(previous, 0)) / 100,
            done=outcome.completed or success or outcome.score < 0,
            success=success,
            valid=outcome.observation.strip() != INVALID,
        )

    @property
    def game(self) -> tuple[str, int]:
        """(task name, variation) of the running game."""
        if self._game is None:
            raise EnvError(f"{self.name}: no game before reset(task_id)")
        return self._game

    @property
    def score(self) -> int:
        """The simulator's score of the running task (0-100, negative if failed)."""
        return self._score

    def goal_progress(self) -> str:
        return self.simulator.goal_progress()

    def action_hint(self) -> dict[str, list[str]]:
        return {
            "possible_actions": self.simulator.possible_actions(),
            "possible_objects": self.simulator.possible_objects(),
        }

    def expert_action(self) -> tuple[str, str]:
        self._check_running()
        if self._gold is None:
            self._gold = self._gold_path()
        step = len(self._taken)
        if self._taken != self._gold[:step]:
            raise EnvError("sciworld: the expert only plays episodes it started")
        if step >= len(self._gold):
            raise EnvError("sciworld: the gold path ended before the task did")
        action = self._gold[step]
        return thought_for(action), action

    def _gold_path(self) -> list[str]:
        """Reload the game with its gold path and replay the actions taken so far."""
        assert self._game is not None
        taken = list(self._taken)
        self.simulator.load(*self._game, gold=True)
        gold = self.simulator.gold_actions()
        self.simulator.step("look around")
        for action in taken:
            self.simulator.step(action)
        return gold

    def close(self) -> None:
        if self._simulator is not None:
            simulator, self._simulator = self._simulator, None
            POOL.release(simulator)


THOUGHTS = {
    "look around": "I should look around to see what is here.",
    "look at": "I should look at {rest} closely.",
    "look in": "I should look in {rest}.",
    "open": "I should open {rest} to get through or see inside.",
    "go to": "I should go to {rest}.",
    "teleport to": "I should go straight to {rest}.",
    "focus on": "The task is about {rest}, so I should focus on it.",
    "pick up": "I should pick up {rest}.",
    "move": "I should move {rest}.",
    "pour": "I should pour {rest}.",
    "activate": "I should turn on {rest}.",
    "deactivate": "I should turn off {rest}.",
    "wait": "I should wait for the change to happen.",
    "wait1": "I should wait a moment.",
    "connect": "I should connect {rest}.",
    "use": "I should use {rest}.",
    "mix": "I should mix {rest}.",
}


def thought_for(action: str) -> str:
    """A short thought for a gold action (a number answers an ambiguity prompt)."""
    action = action.strip()
    if action.isdigit():
        return "Several things match; I pick the one I meant."
    for prefix in sorted(THOUGHTS, key=len, reverse=True):
        if action == prefix or action.startswith(prefix + " "):
            rest = action[len(prefix) :].strip()
            return THOUGHTS[prefix].format(rest=rest)
    return f"Next I should {action}."

"""Doors: a one-turn game with a known optimum, for checking that RL learns.

Description
-----------
The agent stands before two doors, ``left`` and ``right``, and is shown a sign
(an arrow or a hand pointing one way); the door it points to opens. A policy
that ignores the sign wins half the time when it names a door; the optimum wins
every time. So a learning curve has a known floor and ceiling (1.0), and the
policy must condition on the state to reach it. SmolLM2-135M-Instruct, sampled
at temperature 1.0, names the right door in about a quarter of its replies
(most of the rest name none), greedily in three quarters.

Task ``i`` shows sign ``i mod 4``; the test split is ids 0–19, training ids
100–299, validation ids 300–339 (ten of each sign).

Observation
-----------
``The sign shows an arrow pointing left. Which door do you open?``

Actions
-------
The door named first in the reply (``left`` or ``right`` as a word, any case;
reply format ``text``, so "The left one" opens the left door). A reply naming
neither is invalid and ends the game unrewarded.

Rewards and termination
-----------------------
Reward 1 and success for the right door, 0 for the wrong one; one turn.
"""

from __future__ import annotations

import re

from evoflow.envs.base import Step, TaskError, TextEnv

SIGNS = ("an arrow pointing left", "an arrow pointing right",
         "a hand pointing left", "a hand pointing right")  # fmt: skip
DOOR = re.compile(r"\b(left|right)\b", re.IGNORECASE)
TEST = range(0, 20)
TRAIN = range(100, 300)
VALIDATION = range(300, 340)


class DoorsEnv(TextEnv):
    name = "doors"
    lists_actions = True
    max_turns = 1
    reply_format = "text"
    instructions = (
        "You stand before two doors, left and right. A sign tells which door "
        "opens. Say which door you open: left or right."
    )

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        return {
            "train": [str(i) for i in TRAIN],
            "validation": [str(i) for i in VALIDATION],
            "test": [str(i) for i in TEST],
        }

    @classmethod
    def stratum(cls, task_id: str) -> str:
        return sign_of(task_id)

    def _reset(self, task_id: str) -> str:
        self.sign = sign_of(task_id)
        return f"The sign shows {self.sign}. Which door do you open?"

    def _step(self, action: str) -> Step:
        named = DOOR.search(action)
        door = named.group(1).lower() if named else None
        if door is None:
            return Step(
                f"'{action}' is not a door; the game is over.", 0.0, True, False, False
            )
        won = door == self.sign.rsplit(" ", 1)[1]
        text = "The door opens." if won else "The door is locked."
        return Step(text, float(won), True, won)

    def expert_action(self) -> tuple[str, str]:
        door = self.sign.rsplit(" ", 1)[1]
        return f"The sign points {door}.", door

    def available_actions(self) -> list[str]:
        return ["left", "right"]


def sign_of(task_id: str) -> str:
    try:
        index = int(task_id)
    except ValueError:
        raise TaskError(f"doors: task id {task_id!r} is not an integer") from None
    if index not in TEST and index not in TRAIN and index not in VALIDATION:
        raise TaskError(f"doors: no task with id {task_id!r}")
    return SIGNS[index % len(SIGNS)]

"""BabyAI actions: reading them, and the list that ends every observation.

AgentGym's BabyAI server ends every observation with a line
``Available actions: ["turn left", "turn right", ...]`` and its clients, models
trained on its trajectories and small models alike pick an action by copying
one from it, so both the line's format and the action spellings are protocol:

* ``pickup <color> <type> <n>`` (``pick up`` is read too);
* doors are named with their state, ``go to red closed door 1``,
  ``toggle and go through green locked door 1``, ``go through blue open door 2``
  (a name without the state, ``red door 1``, is read too; a wrong state word is
  ignored, the number says which door is meant);
* the list's order is AgentGym's: turns, ``move forward``, pickups, ``drop``,
  door actions (with ``toggle`` after the door being faced), ``go to`` for every
  object, ``check available actions``; objects nearest first.

Unlike AgentGym's list, ours holds only actions that can be carried out:
``move forward`` only onto a free cell (AgentGym lists it in front of a ball or a
closed door too), and objects the agent has seen earlier stay listed while they
are reachable over cells it has seen.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from evoflow.envs.babyai_world import World, front

COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
TYPES = ("ball", "box", "key", "door")
STATES = ("open", "closed", "locked")
SIMPLE_VERBS = (
    "turn left",
    "turn right",
    "move forward",
    "toggle",
    "drop",
    "check available actions",
)
# Longest first, so "toggle and go through" is not read as "go through".
OBJECT_VERBS = ("toggle and go through", "go through", "go to", "pickup")
SPELLINGS = {"pick up": "pickup"}
REFERENCE = re.compile(
    rf"(?:the )?({'|'.join(COLORS)}|gray) (?:({'|'.join(STATES)}) )?"
    rf"({'|'.join(TYPES)})(?: ([0-9]{{1,3}}))?"
)
LIST_PREFIX = "Available actions: "


@dataclass(frozen=True)
class Command:
    """A parsed action: a verb and, for object verbs, the object named."""

    verb: str
    color: str = ""
    kind: str = ""
    number: int | None = None
    state: str | None = None

    @property
    def reference(self) -> str:
        """The object as written (``red closed door 1``, ``grey ball``)."""
        words = [self.color, self.state, self.kind, self.number]
        return " ".join(str(w) for w in words if w is not None and w != "")


def parse_command(text: str) -> Command | None:
    """The command written in ``text``, or None when it is not one."""
    words = " ".join(text.strip().lower().rstrip(".!").split())
    if words in SIMPLE_VERBS:
        return Command(words)
    for spelling, verb in SPELLINGS.items():
        if words.startswith(spelling + " "):
            words = verb + words[len(spelling) :]
    for verb in OBJECT_VERBS:
        if not words.startswith(verb + " "):
            continue
        match = REFERENCE.fullmatch(words[len(verb) + 1 :])
        if match is None:
            return None
        color, state, kind, number = match.groups()
        if state is not None and kind != "door":
            return None
        return Command(
            verb,
            "grey" if color == "gray" else color,
            kind,
            None if number is None else int(number),
            state,
        )
    return None


def action_list(world: World) -> list[str]:
    """The actions that can be carried out now, in AgentGym's order."""
    ahead = world.cell(front(world.pose))
    actions = ["turn left", "turn right"]
    if world.walkable(front(world.pose)):
        actions.append("move forward")
    facing = world.macro_search().facing
    known = [(obj, cell) for obj, cell in world.known_objects() if cell in facing]
    if world.carrying is None:
        actions += [f"pickup {world.name(o)}" for o, _ in known if o.type != "door"]
    elif ahead is None and world.walkable(front(world.pose)):
        actions.append("drop")
    for door, _ in known:
        if door.type != "door":
            continue
        if door.is_open:
            actions.append(f"go through {world.name(door)}")
        elif not door.is_locked or world.has_key_for(door):
            actions.append(f"toggle and go through {world.name(door)}")
        if door is ahead and can_toggle(world, door):
            actions.append("toggle")
    if ahead is not None and ahead.type == "box" and world.is_named(ahead):
        actions.append("toggle")
    actions += [f"go to {world.name(o)}" for o, _ in known]
    actions.append("check available actions")
    return actions


def can_toggle(world: World, obj) -> bool:
    """Whether ``toggle`` changes ``obj`` (a box, or a door the agent can open)."""
    if obj.type == "box":
        return True
    return obj.type == "door" and (not obj.is_locked or world.has_key_for(obj))


def list_line(actions: list[str]) -> str:
    """``Available actions: ["turn left", ...]``, formatted as AgentGym does."""
    return LIST_PREFIX + json.dumps(actions)

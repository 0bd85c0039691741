"""Text side of the BabyAI environment: describing the view and reading actions.

The view description lists the named objects the agent sees with their offsets
(steps ahead, steps to the left or right), says what lies straight ahead and what
the agent carries. Commands are parsed into a verb plus an optional object
reference such as ``red ball 1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evoflow.envs.babyai_world import World

COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
TYPES = ("ball", "box", "key", "door")
SIMPLE_VERBS = (
    "turn left",
    "turn right",
    "move forward",
    "toggle",
    "drop",
    "check available actions",
)
# Longest first, so "toggle and go through" is not read as "go through".
OBJECT_VERBS = ("toggle and go through", "go through", "go to", "pick up")
REFERENCE = re.compile(
    rf"(?:the )?({'|'.join(COLORS)}|gray) ({'|'.join(TYPES)})(?: ([0-9]{{1,3}}))?"
)

INSTRUCTIONS = (
    "You act in a BabyAI grid world: rooms divided by walls and doors, with keys, "
    "balls and boxes of six colours. Each observation describes what you can see "
    "from where you stand; you see only a few cells ahead and to the sides, and not "
    "through walls or closed doors. Objects are named by colour, type and a number, "
    "e.g. 'red ball 1' or 'grey door 2'; a name keeps meaning the same object for "
    "the whole episode. Offsets are counted in steps ahead of you and to your left "
    "or right. You can carry one object at a time, and a locked door opens only "
    "while you carry the key of its colour.\n"
    "Actions (write exactly one per turn):\n"
    "- turn left / turn right: turn on the spot.\n"
    "- move forward: step into the cell in front of you.\n"
    "- go to <color> <type> <id>: walk to an object you have seen and face it.\n"
    "- pick up <color> <type> <id>: walk to an object you have seen and pick it "
    "up; your hands must be empty.\n"
    "- go through <color> door <id>: walk through an open door you have seen.\n"
    "- toggle and go through <color> door <id>: walk to a door you have seen, open "
    "it (unlocking it if you carry its key) and walk through.\n"
    "- toggle: open or close the door in front of you, or open the box in front "
    "of you.\n"
    "- drop: put what you carry on the free cell in front of you.\n"
    "- check available actions: list the actions that make sense right now.\n"
    "Walking actions only cross cells you have already seen. The episode ends when "
    "the goal is completed or when its time runs out."
)


@dataclass(frozen=True)
class Command:
    """A parsed action: a verb and, for object verbs, the object named."""

    verb: str
    color: str = ""
    kind: str = ""
    number: int | None = None

    @property
    def reference(self) -> str:
        number = "" if self.number is None else f" {self.number}"
        return f"{self.color} {self.kind}{number}"


def parse_command(text: str) -> Command | None:
    """The command written in ``text``, or None when it is not one."""
    words = " ".join(text.strip().lower().rstrip(".!").split())
    if words in SIMPLE_VERBS:
        return Command(words)
    for verb in OBJECT_VERBS:
        if not words.startswith(verb + " "):
            continue
        match = REFERENCE.fullmatch(words[len(verb) + 1 :])
        if match is None:
            return None
        color, kind, number = match.groups()
        return Command(
            verb,
            "grey" if color == "gray" else color,
            kind,
            None if number is None else int(number),
        )
    return None


def steps(n: int) -> str:
    return f"{n} step{'' if n == 1 else 's'}"


def offset_phrase(ahead: int, right: int) -> str:
    """'2 steps ahead and 1 step to your left' style offsets."""
    parts = []
    if ahead > 0:
        parts.append(f"{steps(ahead)} ahead")
    if right:
        parts.append(f"{steps(abs(right))} to your {'right' if right > 0 else 'left'}")
    return " and ".join(parts)


def full_name(world: World, obj) -> str:
    """An object's name, with the state of a door in front ('locked red door 1')."""
    name = world.name(obj)
    if obj.type != "door":
        return name
    state = "open" if obj.is_open else "locked" if obj.is_locked else "closed"
    return f"{state} {name}"


def thing_name(world: World, obj) -> str:
    if obj.type == "wall":
        return "a wall"
    if id(obj) in world.labels:
        return f"the {full_name(world, obj)}"
    return f"a {obj.type}"


def describe_view(world: World) -> str:
    """What the agent sees, what lies straight ahead and what it carries."""
    game = world.game
    grid, visible = game.gen_obs_grid()
    size = game.agent_view_size
    cx, cy = size // 2, size - 1
    items = []
    for j in range(size):
        for i in range(size):
            obj = grid.get(i, j)
            if not visible[i, j] or (i, j) == (cx, cy) or obj is None:
                continue
            if id(obj) in world.labels and obj.type != "wall":
                ahead, right = cy - j, i - cx
                where = offset_phrase(ahead, right)
                items.append(
                    (ahead + abs(right), ahead, right, full_name(world, obj), where)
                )
    items.sort(key=lambda item: item[:3])
    if items:
        seen = (
            "You see "
            + "; ".join(f"{name}, {where}" for *_, name, where in items)
            + "."
        )
    else:
        seen = "You see no objects, only floor and walls."
    return "\n".join(
        (seen, ahead_sentence(world, grid, visible), carrying_sentence(world))
    )


def ahead_sentence(world: World, grid, visible) -> str:
    size = world.game.agent_view_size
    cx, cy = size // 2, size - 1
    clear = 0
    for k in range(1, size):
        if not visible[cx, cy - k]:
            break
        obj = grid.get(cx, cy - k)
        if obj is None:
            clear = k
            continue
        if k == 1:
            return f"Directly in front of you is {thing_name(world, obj)}."
        return f"The way ahead is clear for {steps(k - 1)}, then comes {thing_name(world, obj)}."
    return f"The way ahead is clear for at least {steps(clear)}."


def carrying_sentence(world: World) -> str:
    if world.carrying is None:
        return "You are carrying nothing."
    return f"You are carrying {world.name(world.carrying)}."

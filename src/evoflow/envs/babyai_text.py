"""Text side of the BabyAI environment: the rules shown to agents and the view.

The view description lists the named objects the agent sees with their offsets
(steps ahead, steps to the left or right), says what lies straight ahead and what
the agent carries. Its wording is ours: no AgentGym client reads it. Names and
the action spellings follow AgentGym (see ``babyai_actions``).
"""

from __future__ import annotations

from evoflow.envs.babyai_world import World, view_order

INSTRUCTIONS = (
    "You act in a BabyAI grid world: rooms divided by walls and doors, with keys, "
    "balls and boxes of six colours. Each observation describes what you can see "
    "from where you stand; you see only a few cells ahead and to the sides, and not "
    "through walls or closed doors. Objects are named by colour, type and a number, "
    "e.g. 'red ball 1'; a door's name also says whether it is open, closed or "
    "locked, e.g. 'grey closed door 2'. A number keeps meaning the same object for "
    "the whole episode. Offsets are counted in steps ahead of you and to your left "
    "or right. You can carry one object at a time, and a locked door opens only "
    "while you carry the key of its colour.\n"
    "Actions (write exactly one per turn):\n"
    "- turn left / turn right: turn on the spot.\n"
    "- move forward: step into the cell in front of you.\n"
    "- go to <object>: walk to an object you have seen and face it.\n"
    "- pickup <object>: walk to an object you have seen and pick it up; your hands "
    "must be empty.\n"
    "- go through <door>: walk through an open door you have seen.\n"
    "- toggle and go through <door>: walk to a closed or locked door you have seen, "
    "open it (unlocking it if you carry its key) and walk through.\n"
    "- toggle: open or close the door in front of you, or open the box in front "
    "of you.\n"
    "- drop: put what you carry on the free cell in front of you.\n"
    "- check available actions: list the actions that make sense right now.\n"
    "Every observation ends with 'Available actions: [...]', the actions that make "
    "sense right now; copy one of them exactly. Walking actions only cross cells "
    "you have already seen. The episode ends when the goal is completed or when its "
    "time runs out."
)


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


def thing_name(world: World, obj) -> str:
    if obj.type == "wall":
        return "a wall"
    if world.is_named(obj):
        return f"the {world.name(obj)}"
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
            if world.is_named(obj):
                ahead, right = cy - j, i - cx
                order = view_order((0, 0, 3), (right, -ahead))
                items.append((order, world.name(obj), offset_phrase(ahead, right)))
    items.sort(key=lambda item: item[0])
    if items:
        seen = (
            "You see " + "; ".join(f"{name}, {where}" for _, name, where in items) + "."
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

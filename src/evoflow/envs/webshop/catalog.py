"""The generated WebShop-lite catalog and its shopping goals.

The catalog is built from ``taxonomy`` in families, each with a goal: a target
product, the goal (a subset of the target's attributes, one offered value per
option kind, a price bound above its price) and one to three near-misses that
differ from the goal in exactly one respect:

* ``attribute``: one goal attribute replaced by another attribute,
* ``option``: one chosen option value not offered,
* ``price``: priced above the goal's bound.

Every random choice comes from ``evoflow.seeding.py_random("webshop", ...)``, so
the catalog is identical in every process; it is built on first use and cached.
Products are listed by ASIN, which puts near-misses before or after their target
at random.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

from evoflow.envs.webshop.taxonomy import (
    BRAND_HEADS,
    BRAND_TAILS,
    FILLER_BULLETS,
    FILLER_SENTENCES,
    OPTION_PHRASES,
    OPTION_VALUES,
    ProductType,
    product_types,
)
from evoflow.seeding import py_random

FAMILY_COUNT = 2_600
ASIN_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"
PRICE_BOUNDS = (5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 120, 150, 200,
                250, 300, 350, 400, 500)  # fmt: skip
NEAR_MISS_KINDS = ("attribute", "option", "price")
INSTRUCTION_TEMPLATES = (
    "i need {a} {attrs} {noun} with {opts}, and price lower than {price} dollars",
    "i am looking for {a} {noun} that {is} {attrs}, in {opts}, and price lower than "
    "{price} dollars",
    "find me {a} {attrs} {noun} in {opts}, and price lower than {price} dollars",
    "i want to buy {a} {noun} which {is} {attrs} and {comes} in {opts}, and price "
    "lower than {price} dollars",
    "please get me {a} {attrs} {noun}; i prefer {opts}, and price lower than "
    "{price} dollars",
)


@dataclass(frozen=True)
class Product:
    """One catalog item; ``options`` maps each option kind to its offered values."""

    asin: str
    product_type: str
    path: tuple[str, str, str]
    title: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: float
    rating: float
    bullets: tuple[str, ...]
    description: str
    role: str  # "target" or "near-miss <kind>"

    @property
    def text(self) -> str:
        """Title, bullet points and description: what search and reward read."""
        return " ".join((self.title, *self.bullets, self.description))

    def offers(self, value: str) -> bool:
        return any(value in values for _, values in self.options)


@dataclass(frozen=True)
class Goal:
    """A shopping goal; every attribute and option value is quoted in ``instruction``.

    ``family`` numbers the generated family; tasks are numbered separately, see
    ``goals.py``.
    """

    family: int
    asin: str  # the target product
    product_type: str
    path: tuple[str, str, str]
    title: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]  # (option kind, wanted value)
    price_upper: float
    instruction: str
    near_misses: tuple[str, ...]  # ASINs


@dataclass(frozen=True, eq=False)
class Catalog:
    """Products sorted by ASIN, family goals by family, and an ASIN look-up table."""

    products: tuple[Product, ...]
    goals: tuple[Goal, ...]
    by_asin: dict[str, Product]


def _new_asin(rand: random.Random, taken: set[str]) -> str:
    while True:
        asin = "B0" + "".join(rand.choice(ASIN_ALPHABET) for _ in range(8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _title_case(text: str) -> str:
    return " ".join(w if w.isupper() else w.capitalize() for w in text.split())


def _is_plural(noun: str) -> bool:
    return noun.endswith("s") and not noun.endswith("ss")


def _article(word: str, noun: str) -> str:
    """Indefinite article before ``word`` in a phrase naming ``noun`` ("" if plural)."""
    if _is_plural(noun):
        return ""
    return "an" if word[0] in "aeiou" else "a"


def _join(items: list[str] | tuple[str, ...]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@dataclass(frozen=True)
class _Draft:
    """Everything that differs between members of a family."""

    brand: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: float
    role: str


def _render(
    draft: _Draft, kind: ProductType, asin: str, rand: random.Random
) -> Product:
    """Write title, bullet points and description of a drafted product."""
    noun = kind.noun
    title = " ".join(
        [draft.brand, *map(_title_case, draft.attributes), _title_case(noun)]
    )
    pattern = rand.choice(
        (
            "{A}: made for daily use.",
            "{A} {noun} you can rely on.",
            "Designed to be {a}.",
        )
    )
    bullets = [
        pattern.format(A=a.capitalize(), a=a, noun=noun) for a in draft.attributes
    ]
    bullets += [f"{k.capitalize()} choices: {_join(v)}." for k, v in draft.options]
    bullets += rand.sample(FILLER_BULLETS, 2)
    offered = " ".join(
        f"Available {k}: {_join(values)}." for k, values in draft.options
    )
    description = (
        f"This {noun} by {draft.brand} is {_join(draft.attributes)}. {offered} "
        f"{rand.choice(FILLER_SENTENCES)}"
    )
    return Product(
        asin=asin,
        product_type=noun,
        path=kind.path,
        title=title,
        attributes=draft.attributes,
        options=draft.options,
        price=draft.price,
        rating=round(rand.uniform(3.0, 5.0), 1),
        bullets=tuple(bullets),
        description=description,
        role=draft.role,
    )


def _brand(rand: random.Random) -> str:
    return rand.choice(BRAND_HEADS) + rand.choice(BRAND_TAILS)


def _draft_target(kind: ProductType, rand: random.Random) -> _Draft:
    attributes = tuple(rand.sample(kind.attributes, rand.choice((3, 4))))
    options = []
    for option_kind in kind.option_kinds:
        pool = OPTION_VALUES[option_kind]
        count = rand.randint(max(2, (len(pool) + 1) // 2), len(pool) - 1)
        chosen = set(rand.sample(pool, count))
        options.append((option_kind, tuple(v for v in pool if v in chosen)))
    price = round(rand.uniform(kind.low, kind.high), 2)
    return _Draft(_brand(rand), attributes, tuple(options), price, "target")


def _price_bound(price: float, rand: random.Random) -> float:
    floor = price * rand.uniform(1.1, 1.5)
    return float(next(b for b in PRICE_BOUNDS if b >= floor))


def _near_miss(
    target: _Draft, goal_attrs: tuple[str, ...], goal_opts: tuple[tuple[str, str], ...],
    bound: float, miss: str, kind: ProductType, rand: random.Random,
) -> _Draft:  # fmt: skip
    """A copy of the target that fails the goal in exactly the way ``miss`` says."""
    attributes, options = target.attributes, target.options
    price = round(min(target.price * rand.uniform(0.85, 1.15), bound - 0.01), 2)
    if miss == "attribute":
        dropped = rand.choice(goal_attrs)
        spare = [a for a in kind.attributes if a not in attributes]
        swap = rand.choice(spare)
        attributes = tuple(swap if a == dropped else a for a in attributes)
    elif miss == "option":
        option_kind, wanted = rand.choice(goal_opts)
        pool = OPTION_VALUES[option_kind]
        offered = dict(options)[option_kind]
        spare = [v for v in pool if v not in offered]
        keep = {v for v in offered if v != wanted} | set(
            rand.sample(spare, min(1, len(spare)))
        )
        changed = tuple(v for v in pool if v in keep)
        options = tuple((k, changed if k == option_kind else v) for k, v in options)
    else:
        price = round(rand.uniform(bound * 1.05, bound * 1.35), 2)
    return _Draft(_brand(rand), attributes, options, price, f"near-miss {miss}")


def _instruction(
    kind: ProductType, attrs: tuple[str, ...], opts: tuple[tuple[str, str], ...],
    bound: float, rand: random.Random,
) -> str:  # fmt: skip
    template = rand.choice(INSTRUCTION_TEMPLATES)
    phrases = [OPTION_PHRASES[k].format(v) for k, v in opts]
    first = attrs[0] if "{a} {attrs}" in template else kind.noun
    plural = _is_plural(kind.noun)
    text = template.format(
        a=_article(first, kind.noun),
        attrs=_join(attrs),
        noun=kind.noun,
        opts=_join(phrases),
        price=f"{bound:.2f}",
        comes="come" if plural else "comes",
        **{"is": "are" if plural else "is"},
    )
    return " ".join(text.split())


def _family(number: int, taken: set[str]) -> tuple[Goal, list[Product]]:
    """Family ``number``: its goal, target and near-miss products."""
    rand = py_random("webshop", "family", number)
    kind = rand.choice(product_types())
    target = _draft_target(kind, rand)
    goal_attrs = tuple(rand.sample(target.attributes, rand.choice((1, 2, 2, 3))))
    goal_opts = tuple((k, rand.choice(values)) for k, values in target.options)
    bound = _price_bound(target.price, rand)
    misses = rand.sample(NEAR_MISS_KINDS, rand.choice((1, 2, 2, 3)))
    drafts = [target] + [
        _near_miss(target, goal_attrs, goal_opts, bound, m, kind, rand) for m in misses
    ]
    products = [_render(d, kind, _new_asin(rand, taken), rand) for d in drafts]
    goal = Goal(
        family=number,
        asin=products[0].asin,
        product_type=kind.noun,
        path=kind.path,
        title=products[0].title,
        attributes=goal_attrs,
        options=goal_opts,
        price_upper=bound,
        instruction=_instruction(kind, goal_attrs, goal_opts, bound, rand),
        near_misses=tuple(p.asin for p in products[1:]),
    )
    return goal, products


@cache
def catalog() -> Catalog:
    """The whole catalog: products sorted by ASIN, family goals in family order."""
    taken: set[str] = set()
    goals, products = [], []
    for number in range(FAMILY_COUNT):
        goal, family = _family(number, taken)
        goals.append(goal)
        products.extend(family)
    products.sort(key=lambda p: p.asin)
    return Catalog(tuple(products), tuple(goals), {p.asin: p for p in products})

"""WebShop's purchase reward, re-implemented without spaCy or fuzzywuzzy.

reward = r_type * (n_attributes_matched + n_options_matched + price_ok)
         / (n_goal_attributes + n_goal_options + 1)

* An attribute of the goal matches when one of the product's attributes has a
  token-set ratio above 85 with it, or when it occurs in the product's title,
  bullet points or description.
* An option of the goal matches when one of the options selected at purchase has a
  token-set ratio above 85 with it; an option kind left unselected never matches.
* ``price_ok`` is 1 when the price is at most the goal's upper bound.
* ``r_type`` compares product kinds: 1 when the product is of the goal's product
  type, shares at least two category-path levels with it, or its title shares
  more than 20% of the goal title's "nouns"; 0.5 otherwise; then 0.1 when the
  title share is below 10% and 0 when it is zero.

"Nouns" stand in for spaCy's noun tagging, with a lexicon instead of a tagger:
the lower-case words of a title except stop words, numbers and words of the
attribute vocabulary (where the adjectives of our titles come from); words of
product-type names ("machine", "water") always count as nouns. Brand names are
kept, as spaCy keeps proper nouns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache

from evoflow.envs.webshop.taxonomy import product_types

FUZZY_THRESHOLD = 85
STOP_WORDS = frozenset(
    "a an and are as at be by for from in into is it its of on or that the this "
    "to with without your you our plus".split()
)


def words(text: str) -> list[str]:
    """Lower-case alphanumeric runs of ``text``."""
    return re.findall(r"[a-z0-9]+", text.lower())


def _similarity(a: str, b: str) -> int:
    """difflib similarity of two strings on a 0-100 scale, rounded."""
    if not a or not b:
        return 0
    return round(100 * SequenceMatcher(None, a, b, autojunk=False).ratio())


def token_set_ratio(a: str, b: str) -> int:
    """Similarity of two phrases as word sets (0-100).

    The shared words, sorted, are compared with each side's full sorted word list
    and the two full lists with each other; the best of the three similarities
    counts. A phrase whose words all occur in the other scores 100.
    """
    left, right = set(words(a)), set(words(b))
    if not left or not right:
        return 0
    common = " ".join(sorted(left & right))
    full_left = " ".join(filter(None, [common, " ".join(sorted(left - right))]))
    full_right = " ".join(filter(None, [common, " ".join(sorted(right - left))]))
    return max(
        _similarity(common, full_left),
        _similarity(common, full_right),
        _similarity(full_left, full_right),
    )


def fuzzy_match(a: str, b: str) -> bool:
    return token_set_ratio(a, b) > FUZZY_THRESHOLD


@cache
def _non_nouns() -> frozenset[str]:
    adjectives = {w for t in product_types() for a in t.attributes for w in words(a)}
    nouns = {w for t in product_types() for w in words(t.noun)}
    return frozenset((adjectives - nouns) | STOP_WORDS)


def title_nouns(title: str) -> set[str]:
    """Words of a title that count as nouns for the product-type check."""
    skip = _non_nouns()
    return {w for w in words(title) if w not in skip and not w.isdigit()}


@dataclass(frozen=True)
class Purchase:
    """What was bought: the product's text and the options selected."""

    product_type: str
    path: tuple[str, ...]
    title: str
    attributes: tuple[str, ...]
    text: str  # title, bullet points and description, for attribute look-up
    price: float
    selected: tuple[str, ...]


@dataclass(frozen=True)
class Wish:
    """What the instruction asks for."""

    product_type: str
    path: tuple[str, ...]
    title: str  # the target product's title
    attributes: tuple[str, ...]
    options: tuple[str, ...]
    price_upper: float


def type_reward(wish: Wish, bought: Purchase) -> float:
    """r_type: 1, 0.5, 0.1 or 0 depending on how well the product kinds agree."""
    wanted = title_nouns(wish.title)
    share = len(wanted & title_nouns(bought.title)) / len(wanted) if wanted else 0.2
    same_kind = (
        bought.product_type == wish.product_type
        or len(set(bought.path) & set(wish.path)) >= 2
        or share > 0.2
    )
    if share == 0:
        return 0.0
    if share < 0.1:
        return 0.1
    return 1.0 if same_kind else 0.5


def attribute_matched(attribute: str, bought: Purchase) -> bool:
    if any(fuzzy_match(attribute, a) for a in bought.attributes):
        return True
    return attribute in bought.text.lower()


def reward_parts(wish: Wish, bought: Purchase) -> dict[str, float]:
    """Each factor of the reward (for logs and tests)."""
    return {
        "r_type": type_reward(wish, bought),
        "attributes": sum(attribute_matched(a, bought) for a in wish.attributes),
        "options": sum(
            any(fuzzy_match(o, s) for s in bought.selected) for o in wish.options
        ),
        "price": float(bought.price <= wish.price_upper),
        "total": len(wish.attributes) + len(wish.options) + 1,
    }


def reward(wish: Wish, bought: Purchase) -> float:
    """The purchase reward in [0, 1]; 1 means every requirement was met."""
    p = reward_parts(wish, bought)
    return p["r_type"] * (p["attributes"] + p["options"] + p["price"]) / p["total"]

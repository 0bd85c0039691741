"""Tasks of WebShop-lite: the family goals that a careful shopper can finish.

Task id ``i`` is the ``i``-th kept goal (like AgentGym's WebShop ``session_id``).
A family goal is kept when its instruction is specific enough for the 10-turn
cap. Searching for its key words (``key_words``: the requested attributes,
product type and option values, all quoted in the instruction), the first two
results pages must hold a *complete* listing, one whose title shows the product
type and every requested attribute, whose price is within the bound and which
offers every requested option value; and at most ``MAX_DECOYS`` listings above
it may look complete on the results page (title and price) yet lack a requested
option, which only its product page reveals. A shopper who opens listings that
look complete, in rank order, then needs at most 1 (search) + 2 x 2 (open, go
back) + 1 (next page) + 1 (open) + 2 (options) + 1 (buy) = 10 actions.

Splits: test is the first ``TEST_COUNT`` tasks. The catalog cannot grow without
changing what the test tasks' searches return, so the validation split is
carved out of the others with a fixed seed: ``VALIDATION_PER_STRATUM`` tasks of
each number of requirements, the test split's counts except for 2 requirements,
a rare kind (3 test tasks, 42 in all) of which it takes 20 and leaves the
training split 19. Training is every task left. A task is its instruction
(``content_key``): two goals can read alike (tasks 886 and 2549, both in
training), and what the shopper is told is then the same; goals with a repeated
instruction are never drawn for validation.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

from evoflow.envs.base import TaskError
from evoflow.envs.webshop.catalog import Goal, Product, catalog
from evoflow.envs.webshop.pages import RESULTS_PER_PAGE
from evoflow.envs.webshop.search import search_products
from evoflow.seeding import choose

MAX_DECOYS = 2
SCANNED_PAGES = 2
TEST_COUNT = 200
# Validation tasks per number of requirements (attributes + options asked for).
VALIDATION_PER_STRATUM = {2: 20, 3: 53, 4: 98, 5: 46}


def key_words(goal: Goal) -> str:
    """Search query of the words an instruction quotes: attributes, type, options."""
    return " ".join(
        [*goal.attributes, goal.product_type, *(v for _, v in goal.options)]
    )


def looks_complete(goal: Goal, title: str, price: float) -> bool:
    """Whether a result row (title and price) shows everything the goal asks for."""
    text = title.lower()
    return (
        goal.product_type in text
        and all(a in text for a in goal.attributes)
        and price <= goal.price_upper
    )


def offers_all(goal: Goal, product: Product) -> bool:
    return all(product.offers(value) for _, value in goal.options)


def decoys_before_complete(goal: Goal) -> int | None:
    """Listings that look complete but are not, ranked above the first complete one.

    None when no complete listing is on the first ``SCANNED_PAGES`` pages.
    """
    by_asin = catalog().by_asin
    decoys = 0
    for asin in search_products(key_words(goal), SCANNED_PAGES * RESULTS_PER_PAGE):
        product = by_asin[asin]
        if looks_complete(goal, product.title, product.price):
            if offers_all(goal, product):
                return decoys
            decoys += 1
    return None


@cache
def goals() -> tuple[Goal, ...]:
    """All tasks in id order."""
    kept = []
    for goal in catalog().goals:
        decoys = decoys_before_complete(goal)
        if decoys is not None and decoys <= MAX_DECOYS:
            kept.append(goal)
    return tuple(kept)


def goal_for(task_id: str) -> Goal:
    """The goal of a task id (a decimal goal number without leading zeros)."""
    if not (task_id.isdecimal() and task_id.isascii() and str(int(task_id)) == task_id):
        raise TaskError(f"webshop: task id {task_id!r} is not a goal number")
    index = int(task_id)
    tasks = goals()
    if index >= len(tasks):
        raise TaskError(
            f"webshop: no task with id {task_id!r} (ids 0-{len(tasks) - 1})"
        )
    return tasks[index]


def requirements(goal: Goal) -> int:
    """How much an instruction asks for: attributes plus options to match."""
    return len(goal.attributes) + len(goal.options)


def split_ids() -> dict[str, list[str]]:
    """Test = the first ``TEST_COUNT`` tasks; validation drawn from the others
    per number of requirements (``VALIDATION_PER_STRATUM``); train = the rest."""
    tasks = goals()
    said = Counter(goal.instruction for goal in tasks)
    rest = range(TEST_COUNT, len(tasks))
    held_out: set[str] = set()
    for wanted, quota in VALIDATION_PER_STRATUM.items():
        pool = [
            str(i)
            for i in rest
            if requirements(tasks[i]) == wanted and said[tasks[i].instruction] == 1
        ]
        held_out.update(choose(pool, quota, "webshop", "validation", wanted))
    return {
        "test": [str(i) for i in range(TEST_COUNT)],
        "train": [str(i) for i in rest if str(i) not in held_out],
        "validation": [str(i) for i in rest if str(i) in held_out],
    }

"""WebShop-lite: find and buy the product an instruction describes.

Description
-----------
A small, generated stand-in for WebShop (Yao et al. 2022): 7,813 products in 10
categories (see ``catalog``), BM25 search (``search``), WebShop's page flow and
purchase reward (``reward``). Task ``i`` is the ``i``-th goal (``goals``); the
test split is tasks 0-199, the validation split 217 of the other 2,382 drawn
with a fixed seed per number of requirements (``goals.split_ids``), the train
split the remaining 2,165. A task is its instruction (``content_key``). What
differs from WebShop is listed in ``docs/reference/environments.md``.

Observation
-----------
WebShop's text layout: page parts joined by ``" [SEP] "``, the instruction
first, e.g. ``WebShop [SEP] Instruction: [SEP] i need ... [SEP] Search``. Pages:
search, results (10 per page, at most 50 results), product, description,
features and the purchase page.

Actions
-------
``search[<query>]`` on the search page; ``click[<button>]`` for a button of the
current page (``page_actions`` lists them): a result's ASIN, ``next >``,
``< prev``, ``back to search``, an option value, ``description``,
``features``, ``buy now``. Case and extra spaces inside the brackets do not
matter. Anything else is invalid: the page stays and the turn counts.

Rewards and termination
-----------------------
``click[buy now]`` ends the episode with WebShop's reward in [0, 1] (attributes,
selected options, price and product type; see ``reward``); success means reward
1. Every other step gives 0. Default turn cap 10 (AgentGym's).
"""

from __future__ import annotations

import re

from evoflow.envs.base import EnvError, Step, TextEnv
from evoflow.envs.webshop.catalog import Goal, Product, catalog
from evoflow.envs.webshop.expert import Shopper
from evoflow.envs.webshop.goals import goal_for, requirements, split_ids
from evoflow.envs.webshop.pages import (
    BACK,
    BOUGHT,
    BUY,
    DESCRIPTION,
    FEATURES,
    ITEM,
    NEXT,
    PREV,
    RESULTS,
    RESULTS_PER_PAGE,
    SEARCH,
    Page,
    Row,
)
from evoflow.envs.webshop.reward import Purchase, Wish, reward
from evoflow.envs.webshop.search import search_products

ACTION = re.compile(r"\s*(search|click)\s*\[(.*)\]\s*", re.IGNORECASE | re.DOTALL)
MAX_QUERY_CHARS = 500


def parse_action(action: str) -> tuple[str, str] | None:
    """(verb, argument) of ``search[...]`` / ``click[...]``; None otherwise."""
    match = ACTION.fullmatch(action)
    if match is None:
        return None
    return match.group(1).lower(), " ".join(match.group(2).split())


def wish_of(goal: Goal) -> Wish:
    return Wish(
        product_type=goal.product_type,
        path=goal.path,
        title=goal.title,
        attributes=goal.attributes,
        options=tuple(v for _, v in goal.options),
        price_upper=goal.price_upper,
    )


def purchase_of(product: Product, selected: dict[str, str]) -> Purchase:
    return Purchase(
        product_type=product.product_type,
        path=product.path,
        title=product.title,
        attributes=product.attributes,
        text=product.text,
        price=product.price,
        selected=tuple(selected.values()),
    )


class WebShopEnv(TextEnv):
    name = "webshop"
    max_turns = 10
    instructions = (
        "You are shopping in a web store for the product an instruction describes. "
        "Every page starts with the instruction; the parts of a page are separated "
        "by [SEP]. The first page has a search bar. A search lists the best matching "
        "products, 10 per page, each as its product id, title and price. Opening a "
        "product shows its option buttons grouped by option type (for example "
        "color, size, pack), its price and rating, and buttons to read its "
        "description or features. Click an option value to select it; each "
        "requested option must be selected before buying. Buying ends the task and "
        "scores how well the product fits: its type, the requested attributes, the "
        "selected options and a price below the limit.\n"
        "Actions: search[your query] where there is a search bar; click[button] "
        "with a button of the current page written as shown, such as a product id "
        "(click[b0abc12345]), click[next >], click[< prev] (previous results page, "
        "or back from a product to the results, or from description and features "
        "to the product), click[back to search], an option value (click[vanilla]), "
        "click[description], click[features] and click[buy now]."
    )

    @classmethod
    def stratum(cls, task_id: str) -> str:
        """How much the instruction asks for: attributes plus options to match
        (``2 requirements`` … ``5 requirements``)."""
        return f"{requirements(goal_for(task_id))} requirements"

    @classmethod
    def content_key(cls, task_id: str) -> str:
        """The instruction the shopper is given. The target product is left
        out: every goal has its own, so it would tell apart two goals that read
        alike (tasks 886 and 2549), which are one task to the shopper."""
        return goal_for(task_id).instruction

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        return split_ids()

    # --- episode state -----------------------------------------------------

    def _reset(self, task_id: str) -> str:
        self._goal = goal_for(task_id)
        self._shopper = Shopper(self._goal)
        self._turns = 0
        self._results: list[str] = []
        self._page_no = 1
        self._product: Product | None = None
        self._selected: dict[str, str] = {}
        self._kind = SEARCH
        self._score = 0.0
        return self.page.render()

    @property
    def page(self) -> Page:
        """What the current page shows."""
        if not hasattr(self, "_goal"):
            raise EnvError(f"{self.name}: no page before reset(task_id)")
        start = (self._page_no - 1) * RESULTS_PER_PAGE
        by_asin = catalog().by_asin
        rows = tuple(
            Row(a, by_asin[a].title, by_asin[a].price)
            for a in self._results[start : start + RESULTS_PER_PAGE]
        )
        return Page(
            kind=self._kind,
            instruction=self._goal.instruction,
            rows=rows if self._kind == RESULTS else (),
            page_no=self._page_no,
            total=len(self._results),
            product=self._product,
            selected=self._selection(),
            score=self._score,
        )

    def page_actions(self) -> tuple[bool, list[str]]:
        """(has_search_bar, clickables) of the current page, as WebShop reports them."""
        if not self.running:
            return False, []
        page = self.page
        return page.has_search_bar, page.clickables()

    def available_actions(self) -> list[str]:
        has_search, clickables = self.page_actions()
        actions = ["search[<your query>]"] if has_search else []
        return actions + [f"click[{c}]" for c in clickables]

    def action_choices(self) -> list[str] | None:
        """The page's clicks, where it has no search bar (a query is free text)."""
        has_search, clickables = self.page_actions()
        if has_search or not clickables:
            return None
        return [f"click[{c}]" for c in clickables]

    def action_slots(self) -> list[str]:
        """``search[`` where the page has a search bar: the query is free text."""
        has_search, _ = self.page_actions()
        return ["search["] if has_search else []

    # --- actions -------------------------------------------------------------

    def _step(self, action: str) -> Step:
        self._turns += 1
        parsed = parse_action(action)
        if parsed is None:
            return self._invalid("write search[...] or click[...]")
        verb, argument = parsed
        has_search, clickables = self.page_actions()
        if verb == "search":
            if not has_search:
                return self._invalid("this page has no search bar")
            if not argument or len(argument) > MAX_QUERY_CHARS:
                return self._invalid(f"a query needs 1 to {MAX_QUERY_CHARS} characters")
            self._results = search_products(argument)
            self._page_no, self._kind = 1, RESULTS
            return self._show()
        button = argument.lower()
        if button not in clickables:
            return self._invalid(f"'{argument[:60]}' is not a button on this page")
        return self._click(button)

    def _click(self, button: str) -> Step:
        if button == BUY:
            return self._buy()
        if button == BACK:
            self._results, self._product, self._selected = [], None, {}
            self._kind = SEARCH
        elif button == NEXT:
            self._page_no += 1
        elif button == PREV and self._kind == RESULTS:
            self._page_no -= 1
        elif button == PREV and self._kind == ITEM:
            self._kind, self._product, self._selected = RESULTS, None, {}
        elif button == PREV:  # description or features tab
            self._kind = ITEM
        elif button in (DESCRIPTION, FEATURES) and self._kind == ITEM:
            self._kind = button
        elif self._kind == RESULTS:
            self._product = catalog().by_asin[button.upper()]
            self._kind, self._selected = ITEM, {}
        else:
            self._select(button)
        return self._show()

    def _select(self, value: str) -> None:
        product = self._product
        if product is None:
            raise ValueError("option clicked without a product")
        for kind, values in product.options:
            if value in values:
                self._selected[kind] = value
                return

    def _buy(self) -> Step:
        product = self._product
        if product is None:
            raise ValueError("buy now clicked without a product")
        self._score = reward(wish_of(self._goal), purchase_of(product, self._selected))
        self._kind = BOUGHT
        return Step(self.page.render(), self._score, True, self._score == 1.0)

    def _show(self) -> Step:
        return Step(self.page.render(), 0.0, False, False)

    def _invalid(self, reason: str) -> Step:
        text = f"Invalid action: {reason}. [SEP] {self.page.render()}"
        return Step(text, 0.0, False, False, valid=False)

    # --- expert --------------------------------------------------------------

    def expert_action(self) -> tuple[str, str]:
        self._check_running()
        return self._shopper.act(self.page, self.max_turns - self._turns)

    def _selection(self) -> tuple[tuple[str, str], ...]:
        """Selected (kind, value) pairs in the product's option order."""
        if self._product is None:
            return ()
        kinds = [k for k, _ in self._product.options if k in self._selected]
        return tuple((k, self._selected[k]) for k in kinds)

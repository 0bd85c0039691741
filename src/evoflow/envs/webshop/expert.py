"""The WebShop-lite expert: a shopper that checks listings against the instruction.

It reads only the current page and what the instruction states (the product
type, attributes, option values and price bound, each quoted there verbatim):

1. search for the instruction's key words;
2. on a results page, open the first listing not yet rejected whose title shows
   the product type and every attribute at a price within the bound; with none
   on the page, turn to the next page (up to ``SCANNED_PAGES``);
3. on a product page, go back if a requested option value is not offered
   (unless the turns left are only enough to buy here), otherwise select the
   requested values one by one and buy.

Its only memory is the listings it has rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evoflow.envs.webshop.catalog import Goal
from evoflow.envs.webshop.goals import SCANNED_PAGES, key_words, looks_complete
from evoflow.envs.webshop.pages import (
    BACK,
    BUY,
    DESCRIPTION,
    FEATURES,
    ITEM,
    NEXT,
    PREV,
    RESULTS,
    SEARCH,
    Page,
    Row,
)


@dataclass
class Shopper:
    """Expert policy of one episode."""

    goal: Goal
    rejected: set[str] = field(default_factory=set)

    def act(self, page: Page, turns_left: int) -> tuple[str, str]:
        """(thought, action) for the current page."""
        if page.kind == SEARCH:
            return (
                f"I will search for the {self.goal.product_type} with the features "
                "the instruction names.",
                f"search[{key_words(self.goal)}]",
            )
        if page.kind == RESULTS:
            return self._pick(page)
        if page.kind == ITEM:
            return self._check(page, turns_left)
        if page.kind in (DESCRIPTION, FEATURES):
            return "I have read enough; back to the product.", f"click[{PREV}]"
        raise ValueError(f"the expert cannot act on a {page.kind} page")

    def _pick(self, page: Page) -> tuple[str, str]:
        fresh = [r for r in page.rows if r.asin not in self.rejected]
        for row in fresh:
            if looks_complete(self.goal, row.title, row.price):
                return (
                    f"{row.asin} is a {self.goal.product_type} with "
                    f"{_list(self.goal.attributes)} at ${row.price:.2f}, under "
                    f"${self.goal.price_upper:.2f}; I will open it.",
                    f"click[{row.asin.lower()}]",
                )
        if page.has_next and page.page_no < SCANNED_PAGES:
            return (
                "No listing here shows everything I need; next page.",
                f"click[{NEXT}]",
            )
        best = self._closest(fresh or list(page.rows))
        if best is None:
            return "The search found nothing useful; start over.", f"click[{BACK}]"
        return (
            f"Nothing fits fully; {best.asin} comes closest, so I will open it.",
            f"click[{best.asin.lower()}]",
        )

    def _closest(self, rows: list[Row]) -> Row | None:
        def score(row: Row) -> tuple[int, bool]:
            text = row.title.lower()
            hits = sum(a in text for a in self.goal.attributes)
            return (
                hits + 2 * (self.goal.product_type in text),
                row.price <= self.goal.price_upper,
            )

        return max(rows, key=score, default=None)

    def _check(self, page: Page, turns_left: int) -> tuple[str, str]:
        product = page.product
        if product is None:
            raise ValueError("an item page without a product")
        chosen = dict(page.selected)
        offered = {kind: values for kind, values in product.options}
        missing = [v for k, v in self.goal.options if v not in offered.get(k, ())]
        to_pick = [
            (k, v)
            for k, v in self.goal.options
            if v in offered.get(k, ()) and chosen.get(k) != v
        ]
        # Leaving needs this turn, one to open another product, its options, buy.
        if missing and turns_left >= len(self.goal.options) + 3:
            self.rejected.add(product.asin)
            return (
                f"This one does not offer {_list(missing)}; back to the results.",
                f"click[{PREV}]",
            )
        if to_pick:
            kind, value = to_pick[0]
            return f"Select {value} as the {kind}.", f"click[{value}]"
        if missing:
            return (
                "Too few turns left to keep looking; buy it even without "
                f"{_list(missing)}.",
                f"click[{BUY}]",
            )
        return (
            f"The requested options are selected and ${product.price:.2f} is within "
            "the budget; buy it.",
            f"click[{BUY}]",
        )


def _list(items: list[str] | tuple[str, ...]) -> str:
    items = [f"'{i}'" for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

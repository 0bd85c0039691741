"""The pages of WebShop-lite: what each shows and which buttons it has.

Pages are rendered in WebShop's text layout, parts joined by ``" [SEP] "``, the
instruction first. Buttons (clickables) are lower case; a result's button is its
ASIN in lower case.
"""

from __future__ import annotations

from dataclasses import dataclass

from evoflow.envs.webshop.catalog import Product

SEP = " [SEP] "
RESULTS_PER_PAGE = 10

SEARCH = "search"
RESULTS = "results"
ITEM = "item"
DESCRIPTION = "description"
FEATURES = "features"
BOUGHT = "bought"

BACK = "back to search"
PREV = "< prev"
NEXT = "next >"
BUY = "buy now"


@dataclass(frozen=True)
class Row:
    """One search result as listed: ASIN, title and price."""

    asin: str
    title: str
    price: float


@dataclass(frozen=True)
class Page:
    """Everything the current page shows.

    ``rows`` are the results of this page (results pages only); ``product`` and
    ``selected`` belong to item, tab and purchase pages; ``score`` to the purchase
    page.
    """

    kind: str
    instruction: str
    rows: tuple[Row, ...] = ()
    page_no: int = 1
    total: int = 0
    product: Product | None = None
    selected: tuple[tuple[str, str], ...] = ()
    score: float = 0.0

    @property
    def has_next(self) -> bool:
        return self.page_no * RESULTS_PER_PAGE < self.total

    @property
    def has_search_bar(self) -> bool:
        return self.kind == SEARCH

    def clickables(self) -> list[str]:
        """Buttons of this page, in page order."""
        if self.kind == RESULTS:
            turns = [PREV] if self.page_no > 1 else []
            turns += [NEXT] if self.has_next else []
            return [BACK, *turns, *(r.asin.lower() for r in self.rows)]
        if self.kind == ITEM:
            values = [v for _, vs in self._product.options for v in vs]
            return [BACK, PREV, *values, DESCRIPTION, FEATURES, BUY]
        if self.kind in (DESCRIPTION, FEATURES):
            return [BACK, PREV]
        return []

    @property
    def _product(self) -> Product:
        if self.product is None:
            raise ValueError(f"a {self.kind} page needs a product")
        return self.product

    def render(self) -> str:
        """The observation text of this page."""
        head = ["Instruction:", self.instruction]
        if self.kind == SEARCH:
            return SEP.join(["WebShop", *head, "Search"])
        if self.kind == RESULTS:
            return SEP.join(head + self._results_body())
        if self.kind == ITEM:
            return SEP.join(head + self._item_body())
        if self.kind == DESCRIPTION:
            return SEP.join(
                [*head, "Back to Search", "< Prev", self._product.description]
            )
        if self.kind == FEATURES:
            return SEP.join([*head, "Back to Search", "< Prev", *self._product.bullets])
        if self.kind == BOUGHT:
            return SEP.join(
                ["Thank you for shopping with us!", *head, *self._bought_body()]
            )
        raise ValueError(f"unknown page kind {self.kind!r}")

    def _results_body(self) -> list[str]:
        parts = ["Back to Search", f"Page {self.page_no} (Total results: {self.total})"]
        parts += ["< Prev"] if self.page_no > 1 else []
        parts += ["Next >"] if self.has_next else []
        for row in self.rows:
            parts += [row.asin, row.title, f"${row.price:.2f}"]
        return parts

    def _item_body(self) -> list[str]:
        product = self._product
        parts = ["Back to Search", "< Prev"]
        for kind, values in product.options:
            parts += [kind, *values]
        parts += [
            product.title,
            f"Price: ${product.price:.2f}",
            f"Rating: {product.rating:.1f}",
            f"Selected options: {self._selected_text()}",
            "Description",
            "Features",
            "Buy Now",
        ]
        return parts

    def _bought_body(self) -> list[str]:
        product = self._product
        return [
            "You bought:",
            product.asin,
            product.title,
            f"Price: ${product.price:.2f}",
            f"Selected options: {self._selected_text()}",
            f"Score: {self.score:.2f} out of 1.00",
        ]

    def _selected_text(self) -> str:
        if not self.selected:
            return "none"
        return ", ".join(f"{kind}: {value}" for kind, value in self.selected)

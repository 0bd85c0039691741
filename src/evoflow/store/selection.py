"""Which episodes of a shard a manifest entry selects.

``all`` every episode; ``success`` the successful ones; ``reward>=X`` those whose
episode reward is at least ``X`` (e.g. ``reward>=1`` is AgentEvol's binary filter,
``reward>=0.5`` keeps partial credit). Spaces around ``>=`` are allowed; the
text is stored in the manifest as written, normalised (``reward>=0.5``).
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

FIXED = ("all", "success")
REWARD = re.compile(r"^reward\s*>=\s*(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)$")


def normalise(select: str) -> str:
    """The canonical spelling of a selection, or ``ValueError`` naming it."""
    if select in FIXED:
        return select
    match = REWARD.match(select.strip())
    if match is None:
        raise ValueError(
            f"select {select!r} is not one of 'all', 'success' or 'reward>=<number>'"
        )
    return f"reward>={float(match.group(1)):g}"


def columns_needed(select: str) -> list[str]:
    """The columns ``mask`` reads."""
    if select == "all":
        return []
    return ["success"] if select == "success" else ["reward"]


def mask(select: str, table: pa.Table) -> pa.Array | None:
    """Boolean mask of the selected rows (``None``: every row)."""
    if select == "all":
        return None
    if select == "success":
        return pc.equal(table["success"], True)
    threshold = float(REWARD.match(select).group(1))
    return pc.greater_equal(table["reward"], threshold)


def count(select: str, table: pa.Table) -> int:
    """How many rows of ``table`` (holding ``columns_needed``) are selected."""
    chosen = mask(select, table)
    return table.num_rows if chosen is None else int(pc.sum(chosen).as_py() or 0)

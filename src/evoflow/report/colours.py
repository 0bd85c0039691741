"""One colour per method, the same in every figure of every report.

A method named after its kind (``fedse``, ``pretrained``, …) always has its
kind's colour. A method that shares a kind under another name (``fedse_r4``,
``fedse_dp_low``) takes a colour of the spare palette chosen from its name, the
next free one where another method of the same figure holds it.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

# Related kinds share a hue, one dark and one light (matplotlib's tab20).
KIND_COLOURS = {
    "pretrained": "#7f7f7f",
    "random": "#c7c7c7",
    "local": "#8c564b",
    "centralized": "#c49c94",
    "fedit": "#1f77b4",
    "fedit_matched": "#aec7e8",
    "fedse": "#d62728",
    "fedse_no_history": "#ff9896",
    "fedse_no_filter": "#ff7f0e",
    "fedse_weighted": "#ffbb78",
    "agenttraj_sft": "#2ca02c",
    "agenttraj_l_sft": "#98df8a",
    "agentevol": "#9467bd",
    "agenttraj_sft_matched": "#ad494a",
    "agentgym_rl": "#c5b0d5",
    "scalinginter_rl": "#e377c2",
    "fedrl": "#f7b6d2",
    "sage": "#17becf",
    "sage_wo_challenger": "#9edae5",
    "sage_wo_planner": "#bcbd22",
    "sage_wo_solver": "#dbdb8d",
    "sage_wo_critic": "#393b79",
    "sage_seed_pool": "#843c39",
}
# For methods named otherwise than their kind (matplotlib's tab20b, less the three
# taken above).
SPARE = (
    "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b", "#cedb9c",
    "#8c6d31", "#bd9e39", "#e7ba52", "#e7cb94", "#d6616b",
    "#e7969c", "#7b4173", "#a55194", "#ce6dbd", "#de9ed6",
)  # fmt: skip
OTHER = "#000000"  # a name that is no known kind and no spare is left


def method_colours(names: Sequence[str]) -> dict[str, str]:
    """A colour per method of one figure.

    Parameters
    ----------
    names
        the names of the methods drawn together.

    Returns
    -------
    dict
        method name -> colour (hex); no two methods share one while colours
        are left.
    """
    colours = {name: KIND_COLOURS[name] for name in names if name in KIND_COLOURS}
    taken = set(colours.values())
    for name in sorted(set(names) - set(colours)):
        start = zlib.crc32(name.encode()) % len(SPARE)
        free = [SPARE[(start + i) % len(SPARE)] for i in range(len(SPARE))]
        colour = next((c for c in free if c not in taken), OTHER)
        colours[name] = colour
        taken.add(colour)
    return {name: colours[name] for name in names}

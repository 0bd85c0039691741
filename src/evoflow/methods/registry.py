"""The one list of method kinds: every family's kinds, in table order.

The config schema's ``kind`` enum, the results table's row titles and order,
and the ablation figure's bars are all read from here.
"""

from __future__ import annotations

from typing import Any

from evoflow.methods import agentevol, fedrl, fedse, rl, sage
from evoflow.methods.base import Kind, Method
from evoflow.train.sft_config import SFTConfig

FAMILIES = {module.FAMILY: module for module in (fedse, agentevol, rl, fedrl, sage)}
KINDS: dict[str, Kind] = {
    kind.name: kind for module in FAMILIES.values() for kind in module.KINDS
}
ENVLESS = ("sage",)  # families that play no environment (their own evaluation)
ABLATION_KINDS = tuple(name for name, kind in KINDS.items() if kind.ablation)


def family(method: Method):
    """The module that wires a method's jobs (``evoflow.methods.<family>``)."""
    return FAMILIES[method.kind.family]


def method_title(name: str, kind: str) -> str:
    """A method's row label: the kind's title, with the name when they differ."""
    if name in KINDS:
        return KINDS[name].title
    title = KINDS[kind].title if kind in KINDS else kind
    return f"{title} ({name})"


def methods_from_config(config: dict[str, Any]) -> dict[str, Method]:
    """Resolve every configured method (kind defaults to the method's name)."""
    resolved = {}
    for name, entry in config["methods"].items():
        kind = entry.get("kind") or name
        if kind not in KINDS:
            raise ValueError(
                f"methods.{name}: kind {kind!r} is not one of {', '.join(KINDS)}; "
                "set 'kind' for a custom method name"
            )
        train = {**config["train"], **(entry.get("train") or {})}
        sft = SFTConfig(seed=config["seed"], **train)
        where = FAMILIES[KINDS[kind].family]
        try:
            rounds, options = where.resolve(config, {**entry, "kind": kind})
        except ValueError as exc:
            raise ValueError(f"methods.{name}: {exc}") from None
        fed = config["fed"]
        resolved[name] = Method(name, KINDS[kind], rounds, fed["eval_stride"], sft,
                                options, fed["eval_first"])  # fmt: skip
    playing = [n for n, m in resolved.items() if m.kind.family not in ENVLESS]
    if playing and not config["envs"]:
        raise ValueError(
            f"envs: methods {playing} play environments, but none is configured"
        )
    for name, method in resolved.items():  # cross-method references
        link = getattr(FAMILIES[method.kind.family], "link", None)
        if link is not None:
            resolved[name] = link(method, resolved)
    return resolved

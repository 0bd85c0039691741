"""Text environments, looked up by name.

Classes are imported on first use: BabyAI pulls in minigrid and pygame, which the
other environments (and the HTTP client) should not pay for.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from evoflow.envs.base import (
    EnvError,
    Step,
    TaskError,
    TextEnv,
    Trajectory,
    Turn,
    load_splits,
    play_expert,
    replay,
)

REGISTRY = {
    "babyai": "evoflow.envs.babyai:BabyAIEnv",
    "webshop": "evoflow.envs.webshop:WebShopEnv",
    "textcraft": "evoflow.envs.textcraft:TextCraftEnv",
    "maze": "evoflow.envs.maze:MazeEnv",
    "wordle": "evoflow.envs.wordle:WordleEnv",
    "sciworld": "evoflow.envs.sciworld:SciWorldEnv",
    "doors": "evoflow.envs.doors:DoorsEnv",
}


# Other wordings of a registered environment (``envs.<env>.dialect``); the
# default dialect, "evoflow", is the class in REGISTRY.
DIALECTS = {
    ("babyai", "agentgym"): "evoflow.envs.babyai_agentgym:AgentGymBabyAIEnv",
}
DEFAULT_DIALECT = "evoflow"


def env_class(name: str, dialect: str | None = None) -> type[TextEnv]:
    """The environment class registered under ``name`` (in ``dialect``; None is
    the default dialect)."""
    dialect = dialect or DEFAULT_DIALECT
    if name not in REGISTRY:
        raise ValueError(
            f"unknown environment {name!r}; known: {', '.join(sorted(REGISTRY))}"
        )
    path = (
        REGISTRY[name] if dialect == DEFAULT_DIALECT else DIALECTS.get((name, dialect))
    )
    if path is None:
        spoken = [d for env, d in DIALECTS if env == name]
        raise ValueError(
            f"{name} has no {dialect!r} dialect; it has "
            f"{', '.join([DEFAULT_DIALECT, *spoken])}"
        )
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def make_env(name: str) -> TextEnv:
    """A fresh instance of the environment registered under ``name``."""
    return env_class(name)()


def env_factory(
    name: str, remote: dict[str, Any] | None = None, dialect: str | None = None
) -> Callable[[], TextEnv]:
    """A callable making fresh environments: in-process, or sessions on a server.

    ``remote`` is the config's ``envs.<name>.remote`` mapping (url, protocol),
    ``dialect`` its ``envs.<name>.dialect`` (in-process environments only).
    Remote environments made by one factory share one connection pool.
    """
    if remote is None:
        return env_class(name, dialect)
    import httpx

    from evoflow.envs.remote import RemoteEnv

    client = httpx.Client(
        limits=httpx.Limits(max_connections=256, max_keepalive_connections=256)
    )
    protocol = remote.get("protocol", "evoflow")
    return lambda: RemoteEnv(remote["url"], protocol=protocol, env=name, client=client)


def configured_factory(name: str, entry: dict[str, Any]) -> Callable[[], TextEnv]:
    """``env_factory`` for the config's entry ``envs.<name>`` (its ``remote`` and
    ``dialect``)."""
    return env_factory(name, entry.get("remote"), entry.get("dialect"))


def split_ids(
    name: str,
    split: str,
    remote: dict[str, Any] | None = None,
    strata: list[str] | None = None,
) -> list[str]:
    """Task ids of a split: from the config, the remote server or the env's split
    file; with ``strata``, only the tasks of those strata (``in_strata``)."""
    if remote is not None and strata is not None:
        raise ValueError(
            f"envs.{name}.strata: strata are defined by in-process environments; "
            f"{name} is served remotely"
        )
    if remote is not None and remote.get(f"{split}_ids"):
        return list(remote[f"{split}_ids"])
    env = env_factory(name, remote)()
    try:
        ids = env.task_ids(split)
    finally:
        env.close()
    return (
        ids if strata is None else in_strata(name, ids, strata, f"envs.{name}.strata")
    )


@functools.cache
def known_strata(name: str) -> frozenset[str]:
    """Every stratum and subset name of an in-process env's tasks (all splits)."""
    cls = env_class(name)
    ids = [t for split_ids_ in load_splits(name).values() for t in split_ids_]
    return frozenset({cls.stratum(t) for t in ids} | {cls.subset(t) for t in ids})


def check_strata(name: str, strata: list[str], where: str) -> None:
    """Refuse a stratum name the env does not have (a typo would otherwise be
    dropped without a word, or fail a job later)."""
    unknown = [s for s in strata if s not in known_strata(name)]
    if unknown:
        raise ValueError(f"{where}: {name} has no stratum {', '.join(map(repr, unknown))}; "
                         f"its strata are {sorted(known_strata(name))}")  # fmt: skip


def in_strata(name: str, ids: list[str], strata: list[str], where: str) -> list[str]:
    """The tasks of ``ids`` whose stratum or subset (``TextEnv.stratum``,
    ``TextEnv.subset``) is one of ``strata``; an error names the known ones,
    for an unknown name as for a selection without tasks."""
    check_strata(name, strata, where)
    cls, wanted = env_class(name), set(strata)
    kept = [t for t in ids if {cls.stratum(t), cls.subset(t)} & wanted]
    if not kept:
        seen = sorted({cls.stratum(t) for t in ids} | {cls.subset(t) for t in ids})
        raise ValueError(f"{where}: no task of {name} in {list(strata)}; "
                         f"its strata are {seen}")  # fmt: skip
    return kept


__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "REGISTRY",
    "EnvError",
    "Step",
    "TaskError",
    "TextEnv",
    "Trajectory",
    "Turn",
    "env_class",
    "env_factory",
    "check_strata",
    "in_strata",
    "known_strata",
    "split_ids",
    "make_env",
    "play_expert",
    "replay",
]

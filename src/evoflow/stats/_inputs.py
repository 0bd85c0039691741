"""Checks and grouping of the inputs every statistic takes.

A method's results on test tasks arrive as a mapping from a task key
``(env, task_id)`` to that task's success: 0 or 1 for one episode, or a fraction
in [0, 1] when the task was played several times (episodes, seeds). Here they
are checked and grouped by env, tasks in a fixed order, so that a seeded
resample never depends on the order a dict was filled in.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

import numpy as np

TaskKey = tuple[str, Hashable]
Scores = Mapping[TaskKey, float]
Groups = dict[str, np.ndarray]

# values closer than this count as equal: differences of values in [0, 1] that
# agree in exact arithmetic (0.5 - 0.2 and 0.8 - 0.5) may differ in the last bit
EQUAL = 1e-12


def check_level(level: float) -> float:
    """``level`` as a float, or ValueError unless 0 < level < 1."""
    if isinstance(level, bool) or not isinstance(level, int | float):
        raise ValueError(f"confidence level must be a number, got {level!r}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"confidence level must lie in (0, 1), got {level!r}")
    return float(level)


def check_draws(draws: int) -> int:
    """``draws`` (bootstrap resamples), or ValueError unless a positive int."""
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer):
        raise ValueError(f"draws must be an integer, got {draws!r}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    return int(draws)


def check_unit_values(values: Iterable[float], what: str) -> np.ndarray:
    """``values`` as a float array, or ValueError unless each lies in [0, 1]."""
    array = np.asarray(list(values), dtype=float)
    bad = ~np.isfinite(array) | (array < 0.0) | (array > 1.0)
    if bad.any():
        raise ValueError(
            f"{what}: success values must lie in [0, 1], got {float(array[bad][0])!r}"
        )
    return array


def order_key(key: TaskKey) -> tuple[str, str, str]:
    """A total order over task keys whose task ids may mix types."""
    return (str(key[0]), type(key[1]).__name__, repr(key[1]))


def check_keys(scores: Scores, what: str) -> list[TaskKey]:
    """The task keys of ``scores`` in a fixed order; ValueError if malformed."""
    if not isinstance(scores, Mapping):
        raise ValueError(f"{what}: expected a mapping (env, task_id) -> success")
    for key in scores:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ValueError(f"{what}: task key must be (env, task_id), got {key!r}")
    return sorted(scores, key=order_key)


def checked_scores(scores: Scores, what: str) -> dict[TaskKey, float]:
    """``scores`` in a fixed key order, keys and values checked (values in
    [0, 1]); ValueError if malformed or empty."""
    keys = check_keys(scores, what)
    if not keys:
        raise ValueError(f"{what}: no tasks")
    values = check_unit_values((scores[k] for k in keys), what)
    return dict(zip(keys, values.tolist(), strict=True))


def group_by_env(keys: list[TaskKey], values: list[float], what: str) -> Groups:
    """Env -> array of ``values`` (one per key, in the keys' order)."""
    array = check_unit_values(values, what)
    groups: dict[str, list[float]] = {}
    for key, value in zip(keys, array, strict=True):
        groups.setdefault(str(key[0]), []).append(float(value))
    return {env: np.asarray(vals) for env, vals in sorted(groups.items())}


def shared_pairs(a: Scores, b: Scores, what: str) -> tuple[Groups, Groups]:
    """Env -> A's values and env -> B's values over the tasks both played.

    The two results hold the same envs and, per env, the same tasks in the same
    order. ValueError when no task is shared.
    """
    keys_a = check_keys(a, f"{what} (A)")
    check_keys(b, f"{what} (B)")
    shared = [k for k in keys_a if k in b]
    if not shared:
        raise ValueError(f"{what}: A and B share no test task")
    groups_a = group_by_env(shared, [a[k] for k in shared], f"{what} (A)")
    groups_b = group_by_env(shared, [b[k] for k in shared], f"{what} (B)")
    return groups_a, groups_b


def pooled_mean(groups: Groups) -> float:
    """The mean over all tasks of all envs, each task weighted equally."""
    return float(np.concatenate(list(groups.values())).mean())


def all_equal(values: Iterable[float]) -> bool:
    """Whether ``values`` are all equal, up to ``EQUAL``."""
    return bool(np.ptp(np.asarray(list(values), dtype=float)) <= EQUAL)


def is_constant(groups: Groups) -> bool:
    """Whether every env's values are all equal (resampling changes nothing)."""
    return all(all_equal(values) for values in groups.values())


def is_binary(values: np.ndarray) -> bool:
    """Whether every value is exactly 0 or 1."""
    return bool(np.all((values == 0.0) | (values == 1.0)))

"""Per-task outcomes of an evaluation, read from its episode shards.

Every interval and paired difference in the reports is computed from these,
not from the per-env rates in ``metrics.json``: a paired comparison needs to
know which tasks a method solved, and a cell's interval how many episodes stand
behind it. A task played several times (the random reference plays each test
task once per seed) counts its successes and episodes; its success is their
ratio.

``outcomes.csv`` of a report keeps them (one line per method, round, env and
task), so ``evoflow seeds`` pools runs without opening a shard.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evoflow.errors import EvoflowError
from evoflow.store import read_shard

Key = tuple[str, str]  # (env, task id)
FIELDS = ("method", "round", "env", "task", "successes", "episodes")


class OutcomesError(EvoflowError):
    """An outcomes file or shard that cannot be read as per-task results."""


@dataclass(frozen=True)
class Outcomes:
    """Successes and episodes per (env, task) of one evaluated adapter."""

    tasks: Mapping[Key, tuple[int, int]]

    @property
    def envs(self) -> list[str]:
        return sorted({env for env, _ in self.tasks})

    def of(self, env: str) -> Outcomes:
        """The outcomes of one env's tasks."""
        return Outcomes({k: v for k, v in self.tasks.items() if k[0] == env})

    def within(self, envs: Iterable[str]) -> Outcomes:
        keep = set(envs)
        return Outcomes({k: v for k, v in self.tasks.items() if k[0] in keep})

    @property
    def successes(self) -> int:
        return sum(s for s, _ in self.tasks.values())

    @property
    def episodes(self) -> int:
        return sum(n for _, n in self.tasks.values())

    @property
    def repeated(self) -> bool:
        """Whether some task was played more than once."""
        return any(n > 1 for _, n in self.tasks.values())

    def rates(self) -> dict[Key, float]:
        """Each task's success (successes / episodes)."""
        return {k: s / n for k, (s, n) in self.tasks.items()}


def read_outcomes(episode_files: Sequence[str | Path]) -> Outcomes:
    """Per-task outcomes of an evaluation's episode shards (one per env)."""
    tasks: dict[Key, list[int]] = {}
    for path in episode_files:
        table = read_shard(path, columns=["env", "task_id", "success"])
        columns = table.to_pydict()
        rows = zip(columns["env"], columns["task_id"], columns["success"], strict=True)
        for env, task, success in rows:
            cell = tasks.setdefault((env, task), [0, 0])
            cell[0] += bool(success)
            cell[1] += 1
    return Outcomes({k: (s, n) for k, (s, n) in tasks.items()})


def outcomes_csv(evaluations: Mapping[tuple[str, int], Outcomes]) -> str:
    """``outcomes.csv``: one line per (method, round, env, task)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(FIELDS)
    for (method, round), outcomes in evaluations.items():
        for (env, task), (s, n) in sorted(outcomes.tasks.items()):
            writer.writerow([method, round, env, task, s, n])
    return out.getvalue()


def load_outcomes_csv(path: str | Path) -> dict[tuple[str, int], Outcomes]:
    """Read ``outcomes.csv`` back: (method, round) -> its outcomes."""
    path = Path(path)
    if not path.is_file():
        raise OutcomesError(f"{path}: no such file (has the experiment's report run?)")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise OutcomesError(f"{path}: not an outcomes file (columns {FIELDS})")
        found: dict[tuple[str, int], dict[Key, tuple[int, int]]] = {}
        for line, row in enumerate(reader, start=2):
            try:
                where = (row["method"], int(row["round"]))
                value = (int(row["successes"]), int(row["episodes"]))
            except ValueError:
                raise OutcomesError(f"{path}:{line}: not a number in {row}") from None
            if not 0 <= value[0] <= value[1] or value[1] < 1:
                raise OutcomesError(f"{path}:{line}: successes/episodes {value}")
            found.setdefault(where, {})[(row["env"], row["task"])] = value
    return {k: Outcomes(v) for k, v in found.items()}

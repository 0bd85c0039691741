"""Where Helmsman's artifacts live, and which of them a config asks for
(the rules' targets), under ``results/<experiment>/helmsman/<task>/``:
``data/seed=<s>.npz``, ``baseline=<strategy>/seed=<s>/run.json``, and for the
agents ``plan.json``, ``code/``, ``attempt=<n>/``, ``status.json``,
``attempts.parquet`` and ``generated/seed=<s>/run.json``."""

from __future__ import annotations

from evoflow.helmsman.bench import get_task
from evoflow.helmsman.benchmark import baselines


def agent_tasks(settings: dict) -> list[str]:
    """The tasks the agents attempt (none without an ``agents`` block)."""
    agents = settings.get("agents")
    if not agents:
        return []
    return list(agents.get("tasks") or settings["tasks"])


def runs(folder: str, settings: dict) -> list[str]:
    """Every benchmark run's record: each task's baselines, and the agents'
    final codebase where they attempt the task, for every seed."""
    if not settings:
        return []
    seeds = settings["bench"]["seeds"]
    files = [f"{folder}/{task}/baseline={strategy}/seed={seed}/run.json"
             for task in settings["tasks"] for strategy in baselines(get_task(task))
             for seed in seeds]  # fmt: skip
    files += [f"{folder}/{task}/generated/seed={seed}/run.json"
              for task in agent_tasks(settings) for seed in seeds]  # fmt: skip
    return files


def statuses(folder: str, settings: dict) -> list[str]:
    """The agents' status and attempts of every task they attempt."""
    return [f"{folder}/{task}/{name}" for task in agent_tasks(settings)
            for name in ("status.json", "attempts.parquet")]  # fmt: skip


def reports(reports_folder: str, settings: dict) -> list[str]:
    if not settings:
        return []
    return [
        f"{reports_folder}/helmsman_tables.md",
        f"{reports_folder}/helmsman_tables.csv",
        f"{reports_folder}/helmsman_comparisons.csv",
    ]

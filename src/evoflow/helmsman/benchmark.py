"""AgentFL-Bench runs: a codebase (a baseline of ours, or the agents'
final one) on a task's substitute data in the sandbox, and the task's metric
from the rounds the host scored on the test labels the code never saw
(``scoring``).

Baselines share every module but ``strategy.py``: FedAvg, FedProx and the
paper's specialised method where we have it (``SPECIALISED``). The paper's
other specialised method, FAST, is not reproduced; its
tasks have no specialised row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from evoflow.helmsman.bench import BenchTask
from evoflow.helmsman.simulate import simulate

SPECIALISED = {"FedNova": "fednova", "HeteroFL": "heterofl", "FedPer": "fedper",
               "FedWeIT": "fedweit", "FedNS": "fedns"}  # fmt: skip
GENERAL = ("fedavg", "fedprox")
CONTINUAL = ("fedlwf",)  # beside the paper's Table 5 rows


@dataclass(frozen=True)
class BenchSettings:
    """The training every run of a task shares (the paper: 100 rounds of 5
    local updates; CPU default: 20 rounds of 1 local epoch)."""

    rounds: int = 20
    local_epochs: float = 1.0
    lr: float = 0.1
    batch: int = 32
    hidden: int = 64
    proximal_mu: float = 0.01
    distill: float = 1.0  # FedLwF's weight of the distillation term (LwF's default)
    weit_l1: float = 1e-4  # FedWeIT's sparsity weight λ1 on masks and adaptive weights
    weit_retro: float = 1.0  # FedWeIT's drift penalty λ2 on the base
    seeds: tuple[int, ...] = field(default=(0,))

    @classmethod
    def from_config(cls, bench: dict | None) -> BenchSettings:
        """From a config's ``helmsman.bench`` block (defaults where absent)."""
        bench = dict(bench or {})
        if "seeds" in bench:
            bench["seeds"] = tuple(bench["seeds"])
        return cls(**bench)


def baselines(task: BenchTask) -> list[str]:
    """The strategies a task's baselines run: FedAvg, FedProx, the
    specialised method where it is one we have, and FedLwF for a continual
    task."""
    special = SPECIALISED.get(task.specialised or "")
    extra = CONTINUAL if task.metric == "task_accuracy" else ()
    return [*GENERAL, *([special] if special else []), *extra]


def run_config(task: BenchTask | None, meta: dict, settings: BenchSettings, seed: int,
               strategy: str) -> dict:  # fmt: skip
    """The ``run_config.json`` of one run (``task`` None: a free query, scored
    on global accuracy). Where clients can only hold a narrower model (Q9's
    widths), baselines other than HeteroFL train the model every client can
    hold (the widest all of them can)."""
    metric, label = (task.metric, task.id) if task else ("global_accuracy", "query")
    tasks = len(meta.get("tasks") or [])
    if metric == "task_accuracy" and settings.rounds < tasks:
        raise ValueError(f"{label} plays {tasks} tasks in sequence: it needs at least "
                         f"{tasks} rounds (helmsman.bench.rounds is {settings.rounds})")  # fmt: skip
    hidden = settings.hidden
    widths = meta.get("client_width")
    if widths and strategy != "heterofl":
        hidden = max(1, int(np.ceil(min(widths) * settings.hidden)))
    return {
        "task": label, "strategy": strategy, "seed": seed,
        "clients": int(meta["num_clients"]), "rounds": settings.rounds,
        "local_epochs": settings.local_epochs, "lr": settings.lr, "batch": settings.batch,
        "hidden": hidden, "proximal_mu": settings.proximal_mu, "distill": settings.distill,
        "weit_l1": settings.weit_l1, "weit_retro": settings.weit_retro,
        "fraction": float(meta.get("participation", 1.0)),
        "continual": metric == "task_accuracy",
        "watch": "client_accuracy" if metric == "client_accuracy" else "accuracy",
    }  # fmt: skip


def run(modules: dict[str, str], data: bytes, config: dict, task: BenchTask) -> dict:
    """Run a codebase and score it; the record a report reads."""
    result = simulate(modules, data, config)
    history = json.loads(result.metrics)["rounds"] if result.metrics else []
    problems = list(result.diagnosis.problems)
    scored = {}
    if result.diagnosis.ok:
        try:
            scored = score(task, history, config)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            problems.append(
                f"the scored rounds cannot give the task's metric ({error!r} missing)"
            )
    return {
        "task": task.id, "strategy": config["strategy"], "seed": config["seed"],
        "verdict": result.diagnosis.verdict if not problems else "FAIL", "problems": problems,
        "seconds": result.outcome.seconds, "rounds": history, **scored,
    }  # fmt: skip


def score(task: BenchTask, history: list[dict], config: dict) -> dict:
    """The task's metric after the last round (in %), and for a continual
    task the average forgetting (0–1)."""
    last = history[-1]
    if task.metric == "client_accuracy":
        return {"metric": 100 * float(last["client_accuracy"])}
    if task.metric == "task_accuracy":
        matrix = task_matrix(history, int(config["rounds"]), len(last["task_accuracy"]))
        return {
            "metric": 100 * float(np.mean(matrix[-1])),
            "forgetting": forgetting(matrix),
        }
    return {"metric": 100 * float(last["accuracy"])}


def task_matrix(history: list[dict], rounds: int, tasks: int) -> np.ndarray:
    """a[l, j]: accuracy on task j after the last round of task l (rounds are
    shared out over the tasks in order, as the baseline codebase does)."""
    by_round = {int(r["round"]): r["task_accuracy"] for r in history}
    ends = [max(r for r in range(1, rounds + 1) if (r - 1) * tasks // rounds == t)
            for t in range(tasks)]  # fmt: skip
    return np.array([by_round[end] for end in ends], dtype=float)


def forgetting(matrix: np.ndarray) -> float:
    """Mean over the tasks but the last of (best accuracy on it after any task
    up to the last) − (accuracy on it at the end)."""
    tasks = matrix.shape[0]
    if tasks < 2:
        return 0.0
    drops = [matrix[:, j].max() - matrix[-1, j] for j in range(tasks - 1)]
    return float(np.mean(drops))

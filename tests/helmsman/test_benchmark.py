"""The benchmark's scoring and settings, on hand-worked numbers."""

from __future__ import annotations

import numpy as np
import pytest

from evoflow.helmsman.bench import get_task
from evoflow.helmsman.benchmark import (
    BenchSettings,
    baselines,
    forgetting,
    run_config,
    score,
    task_matrix,
)


def test_forgetting_of_a_model_that_never_changes_is_zero():
    assert forgetting(np.full((5, 5), 0.4)) == 0.0


def test_forgetting_and_average_accuracy_worked_by_hand():
    # tasks 0..2; after task 2 the model kept 0.5 of task 0 (best 0.9) and 0.6 of task 1 (best 0.8)
    matrix = np.array([[0.9, 0.0, 0.0], [0.7, 0.8, 0.0], [0.5, 0.6, 0.95]])
    assert forgetting(matrix) == pytest.approx(((0.9 - 0.5) + (0.8 - 0.6)) / 2)


def test_the_task_matrix_reads_the_last_round_of_each_task():
    # 10 rounds over 5 tasks: tasks end at rounds 2, 4, 6, 8 and 10
    history = [{"round": r, "task_accuracy": [r / 10] * 5} for r in range(11)]
    assert task_matrix(history, 10, 5)[:, 0].tolist() == [0.2, 0.4, 0.6, 0.8, 1.0]
    last = {"round": 10, "accuracy": 0.3, "task_accuracy": [0.0, 0.0, 0.0, 0.0, 0.9]}
    history = [{"round": r, "accuracy": 0.3, "task_accuracy": [0.9 if t == (r - 1) // 2 else 0.0
               for t in range(5)]} for r in range(1, 10)] + [last]  # fmt: skip
    scored = score(get_task("Q16"), history, {"rounds": 10})
    assert scored["metric"] == pytest.approx(100 * 0.9 / 5)
    assert scored["forgetting"] == pytest.approx(
        0.9
    )  # every earlier task fully forgotten


def test_each_task_scores_its_own_metric():
    history = [{"round": 3, "accuracy": 0.5, "client_accuracy": 0.75}]
    assert score(get_task("Q1"), history, {})["metric"] == 50.0
    assert score(get_task("Q12"), history, {})["metric"] == 75.0


def test_the_specialised_baseline_per_task():
    assert baselines(get_task("Q1")) == ["fedavg", "fedprox"]  # the paper names none
    assert baselines(get_task("Q2")) == ["fedavg", "fedprox", "fedns"]
    assert baselines(get_task("Q14")) == ["fedavg", "fedprox"]  # FAST: not reproduced
    assert baselines(get_task("Q5"))[-1] == "fednova"
    assert baselines(get_task("Q9"))[-1] == "heterofl"
    assert baselines(get_task("Q13"))[-1] == "fedper"
    assert baselines(get_task("Q16")) == ["fedavg", "fedprox", "fedweit", "fedlwf"]


def test_narrow_clients_limit_the_other_baselines_model():
    meta = {"num_clients": 15, "client_width": [1.0, 0.5, 0.25]}
    settings = BenchSettings(hidden=64)
    assert run_config(get_task("Q9"), meta, settings, 0, "fedavg")["hidden"] == 16
    assert run_config(get_task("Q9"), meta, settings, 0, "heterofl")["hidden"] == 64
    q10 = run_config(get_task("Q10"), {"num_clients": 15, "participation": 0.3}, settings, 1,
                     "fedavg")  # fmt: skip
    assert q10["fraction"] == 0.3 and q10["seed"] == 1 and not q10["continual"]
    assert run_config(get_task("Q16"), {"num_clients": 15}, settings, 0, "fedavg")[
        "continual"
    ]


def test_a_continual_task_needs_a_round_per_task():
    meta = {"num_clients": 15, "tasks": [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]}
    with pytest.raises(ValueError, match="at least 5 rounds"):
        run_config(get_task("Q16"), meta, BenchSettings(rounds=4), 0, "fedavg")


def test_a_run_without_its_tasks_metric_fails_clearly(tmp_path):
    from evoflow.helmsman import codebase, datafile, partitions
    from evoflow.helmsman.benchmark import run

    task = get_task("Q12")
    data = partitions.build(task, 0)
    datafile.save(data, tmp_path / "q12.npz")
    modules = codebase.baseline("fedavg")  # made to leave no clients' predictions
    server = modules["server_app.py"].replace('predictions[f"clients_0_{k}"] =', "_ =")
    client = modules["client_app.py"].replace('_leave(f"clients_', '(f"clients_')
    assert server != modules["server_app.py"] and client != modules["client_app.py"]
    modules |= {"server_app.py": server, "client_app.py": client}
    meta = {**data.meta, "num_clients": len(data.clients)}
    config = run_config(task, meta, BenchSettings(rounds=3), 0, "fedavg")
    record = run(modules, (tmp_path / "q12.npz").read_bytes(), config, task)
    assert record["verdict"] == "FAIL" and "metric" not in record
    assert "client_accuracy" in " ".join(record["problems"])

"""Our baselines against facts that do not depend on their code: federated
averaging of one full-batch gradient step per client equals centralised
gradient descent (computed here with torch autograd); FedProx with μ = 0 and
FedNova with equal local steps are FedAvg; HeteroFL's aggregation, worked by
hand; a baseline differs from another in strategy.py only."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest
import torch

from evoflow.helmsman import codebase
from evoflow.helmsman.simulate import simulate
from evoflow.sandbox import Limits

FAST = Limits(seconds=60, memory_mb=4096, output_kb=4096)


def _losses(strategy: str, data: bytes, config: dict) -> list[float]:
    run = simulate(codebase.baseline(strategy), data, config, FAST)
    assert run.diagnosis.ok, run.diagnosis.report()
    return [r["loss"] for r in json.loads(run.metrics)["rounds"]]


def _npz_arrays(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data)) as npz:
        return {k: npz[k] for k in npz.files}


def _centralised_gd(
    arrays, hidden: int, seed: int, lr: float, rounds: int
) -> list[float]:
    """Full-batch gradient descent on every client's data pooled, in torch."""
    folder = codebase.baseline()  # the initial weights come from the baseline's init
    namespace: dict = {}
    exec(compile(folder["task.py"], "task.py", "exec"), namespace)
    x_train = np.concatenate([arrays[f"x_train_{k}"] for k in range(4)])
    y_train = np.concatenate([arrays[f"y_train_{k}"] for k in range(4)])
    init = namespace["init_model"](x_train.shape[1], 10, hidden, seed)
    params = [torch.tensor(w, dtype=torch.float64, requires_grad=True) for w in init]

    def loss_on(x, y):
        w1, b1, w2, b2 = params
        logits = torch.relu(torch.tensor(x, dtype=torch.float64) @ w1 + b1) @ w2 + b2
        return torch.nn.functional.cross_entropy(logits, torch.tensor(y))

    with torch.no_grad():
        test_losses = [float(loss_on(arrays["x_test"], arrays["y_test"]))]
    for _ in range(rounds):
        grads = torch.autograd.grad(loss_on(x_train, y_train), params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p -= lr * g
            test_losses.append(float(loss_on(arrays["x_test"], arrays["y_test"])))
    return test_losses


def test_fedavg_of_full_batch_steps_is_centralised_gradient_descent(
    uneven_npz, run_config
):
    # one local step on the whole local set (batch >= client size), weighted averaging
    config = {
        **run_config,
        "rounds": 3,
        "batch": 100_000,
        "local_epochs": 1e-6,
        "lr": 0.5,
    }
    federated = _losses("fedavg", uneven_npz, config)
    central = _centralised_gd(
        _npz_arrays(uneven_npz), config["hidden"], config["seed"], 0.5, 3
    )
    assert federated == pytest.approx(central, abs=2e-5)
    assert central[-1] < central[0] - 0.05  # the steps move the model


def test_fedprox_with_mu_zero_is_fedavg(digits_npz, run_config):
    config = {**run_config, "proximal_mu": 0.0}
    assert _losses("fedprox", digits_npz, config) == _losses(
        "fedavg", digits_npz, config
    )
    assert _losses("fedprox", digits_npz, {**config, "proximal_mu": 1.0}) != _losses(
        "fedavg", digits_npz, config)  # fmt: skip


def test_fednova_with_equal_local_steps_is_fedavg(digits_npz, uneven_npz, run_config):
    # equal client sizes (the fixture splits evenly) give every client the same tau
    nova, avg = (
        _losses("fednova", digits_npz, run_config),
        _losses("fedavg", digits_npz, run_config),
    )
    assert nova == pytest.approx(avg, abs=1e-5)
    # sizes 100..537 give taus 3..17: the normalised average is another model
    nova, avg = (
        _losses("fednova", uneven_npz, run_config),
        _losses("fedavg", uneven_npz, run_config),
    )
    assert abs(nova[-1] - avg[-1]) > 1e-3


def test_baselines_differ_in_their_strategy_module_only():
    reference = codebase.baseline("fedavg")
    for strategy in codebase.STRATEGIES:
        modules = codebase.baseline(strategy)
        differ = {name for name in modules if modules[name] != reference[name]}
        assert differ <= {"strategy.py"}
    with pytest.raises(ValueError, match="unknown baseline strategy"):
        codebase.baseline("fedsgd")


def _strategy_module(name: str, monkeypatch):
    """Import a baseline strategy module the way the sandbox does."""
    folder = codebase.resources.files("evoflow.helmsman") / "baseline"
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.syspath_prepend(str(folder / "strategies"))
    for module in ("task", name):
        sys.modules.pop(module, None)
    return __import__(name)


def test_heterofl_averages_each_weight_over_the_clients_that_hold_it(monkeypatch):
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.supercore.task_identity import TaskIdentity

    for field in ("_task_id", "_run_id", "_node_id"):  # messages are made inside a run
        monkeypatch.setattr(TaskIdentity, field, 1)
    heterofl = _strategy_module("heterofl", monkeypatch)
    strategy = heterofl.HeteroFL(min_available_nodes=1)
    strategy._global = [
        np.full((2, 4), 9.0),
        np.zeros(4),
        np.zeros((4, 1)),
        np.zeros(1),
    ]
    full = [np.ones((2, 4)), np.ones(4), np.ones((4, 1)), np.ones(1)]  # width 1, n = 1
    half = [
        np.full((2, 2), 4.0),
        np.full(2, 4.0),
        np.full((2, 1), 4.0),
        np.full(1, 4.0),
    ]
    replies = [
        Message(RecordDict({"arrays": ArrayRecord(arrays),
                            "metrics": MetricRecord({"num-examples": n, "train_loss": 0.0})}),
                dst_node_id=1, message_type="train")
        for arrays, n in ((full, 1), (half, 3))
    ]  # fmt: skip
    merged, _ = strategy.aggregate_train(1, replies)
    w1 = merged.to_numpy_ndarrays()[0]
    # the first two hidden units: (1*1 + 3*4) / 4 = 3.25; the others: the full client's 1.0
    assert np.allclose(w1[:, :2], 3.25) and np.allclose(w1[:, 2:], 1.0)
    assert np.allclose(merged.to_numpy_ndarrays()[3], 3.25)


@pytest.mark.parametrize("strategy", codebase.STRATEGIES)
def test_each_baseline_learns_digits(strategy, digits_npz, run_config):
    run = simulate(codebase.baseline(strategy), digits_npz, run_config, FAST)
    assert run.diagnosis.ok, run.diagnosis.report()
    rounds = json.loads(run.metrics)["rounds"]
    key = (
        "client_accuracy" if strategy == "fedper" else "accuracy"
    )  # FedPer: personal heads
    first, last = rounds[0].get(key, rounds[0]["accuracy"]), rounds[-1][key]
    assert first < 0.3 and last > 0.8, (first, last)

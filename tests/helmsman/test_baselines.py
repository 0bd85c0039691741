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
from tests.helmsman.flower_parts import reply, strategy_module

FAST = Limits(seconds=60, memory_mb=4096, output_kb=4096)


def _final(strategy: str, data: bytes, config: dict) -> list[np.ndarray]:
    """The final global model a run saved (``model.npz``)."""
    run = simulate(codebase.baseline(strategy), data, config, FAST)
    assert run.diagnosis.ok, run.diagnosis.report()
    with np.load(io.BytesIO(run.model)) as saved:
        return [saved[f"arr_{i}"] for i in range(len(saved.files))]


def _same(a: list[np.ndarray], b: list[np.ndarray], tol: float = 0.0) -> bool:
    return all(np.allclose(x, y, rtol=0, atol=tol) for x, y in zip(a, b, strict=True))


def _npz_arrays(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data)) as npz:
        return {k: npz[k] for k in npz.files}


def _centralised_gd(
    arrays, hidden: int, seed: int, lr: float, rounds: int
) -> tuple[list[float], list[np.ndarray]]:
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
    return test_losses, [p.detach().numpy() for p in params]


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
    federated = _final("fedavg", uneven_npz, config)
    losses, central = _centralised_gd(
        _npz_arrays(uneven_npz), config["hidden"], config["seed"], 0.5, 3
    )
    assert _same(federated, central, tol=2e-5)
    assert losses[-1] < losses[0] - 0.05  # the steps move the model


def test_fedprox_with_mu_zero_is_fedavg(digits_npz, run_config):
    config = {**run_config, "proximal_mu": 0.0}
    avg = _final("fedavg", digits_npz, config)
    assert _same(_final("fedprox", digits_npz, config), avg)
    assert not _same(_final("fedprox", digits_npz, {**config, "proximal_mu": 1.0}), avg,
                     tol=1e-4)  # fmt: skip


def test_fednova_with_equal_local_steps_is_fedavg(digits_npz, uneven_npz, run_config):
    # equal client sizes (the fixture splits evenly) give every client the same tau
    nova, avg = (
        _final("fednova", digits_npz, run_config),
        _final("fedavg", digits_npz, run_config),
    )
    assert _same(nova, avg, tol=1e-5)
    # sizes 100..537 give taus 3..17: the normalised average is another model
    nova, avg = (
        _final("fednova", uneven_npz, run_config),
        _final("fedavg", uneven_npz, run_config),
    )
    assert not _same(nova, avg, tol=1e-3)


def test_baselines_differ_in_their_strategy_module_only():
    reference = codebase.baseline("fedavg")
    for strategy in codebase.STRATEGIES:
        modules = codebase.baseline(strategy)
        differ = {name for name in modules if modules[name] != reference[name]}
        assert differ <= {"strategy.py"}
    with pytest.raises(ValueError, match="unknown baseline strategy"):
        codebase.baseline("fedsgd")


def test_heterofl_averages_each_weight_over_the_clients_that_hold_it(
    monkeypatch, in_a_run
):
    heterofl = strategy_module("heterofl", monkeypatch)
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
    replies = [reply(arrays, **{"num-examples": n, "train_loss": 0.0})
               for arrays, n in ((full, 1), (half, 3))]  # fmt: skip
    merged, _ = strategy.aggregate_train(1, replies)
    w1 = merged.to_numpy_ndarrays()[0]
    # the first two hidden units: (1*1 + 3*4) / 4 = 3.25; the others: the full client's 1.0
    assert np.allclose(w1[:, :2], 3.25) and np.allclose(w1[:, 2:], 1.0)
    assert np.allclose(merged.to_numpy_ndarrays()[3], 3.25)
    alone, _ = strategy.aggregate_train(1, replies[1:])  # only the half-width client
    w1 = alone.to_numpy_ndarrays()[0]
    assert np.allclose(w1[:, :2], 4.0) and np.allclose(
        w1[:, 2:], 9.0
    )  # the rest: global


@pytest.mark.parametrize("strategy", codebase.STRATEGIES)
def test_each_baseline_learns_digits(strategy, digits_npz, run_config):
    run = simulate(codebase.baseline(strategy), digits_npz, run_config, FAST)
    assert run.diagnosis.ok, run.diagnosis.report()
    rounds = json.loads(run.metrics)["rounds"]
    # FedPer's heads and FedWeIT's masks and adaptive weights are personal
    key = "client_accuracy" if strategy in ("fedper", "fedweit") else "accuracy"
    first, last = rounds[0].get(key, rounds[0]["accuracy"]), rounds[-1][key]
    assert first < 0.3 and last > 0.8, (first, last)


def test_fedlwf_forgets_less_than_fedavg_on_split_digits(tmp_path):
    from evoflow.helmsman import datafile, partitions
    from evoflow.helmsman.bench import get_task
    from evoflow.helmsman.benchmark import BenchSettings, run, run_config

    task = get_task("Q16")
    data = partitions.build(task, 0)
    datafile.save(data, tmp_path / "q16.npz")
    meta = {**data.meta, "num_clients": len(data.clients)}
    scored = {}
    for strategy in ("fedavg", "fedlwf"):
        config = run_config(
            task, meta, BenchSettings(rounds=20, distill=2.0), 0, strategy
        )
        record = run(
            codebase.baseline(strategy),
            (tmp_path / "q16.npz").read_bytes(),
            config,
            task,
        )
        scored[strategy] = record
    # FedAvg overwrites each task with the next (measured: forgetting 0.91, FedLwF 0.49)
    assert scored["fedavg"]["forgetting"] > 0.8
    assert scored["fedlwf"]["forgetting"] < scored["fedavg"]["forgetting"] - 0.2
    assert scored["fedlwf"]["metric"] > scored["fedavg"]["metric"]


def test_fednova_steps_by_the_normalised_average_worked_by_hand(monkeypatch, in_a_run):
    fednova = strategy_module("fednova", monkeypatch)
    strategy = fednova.FedNova(min_available_nodes=1)
    strategy._global = [np.array([10.0])]
    # client a: n=1, tau=1, update 2; client b: n=3, tau=4, update 4 (1 per step)
    replies = [reply([[2.0]], **{"num-examples": 1, "steps": 1, "train_loss": 0.0}),
               reply([[4.0]], **{"num-examples": 3, "steps": 4, "train_loss": 0.0})]  # fmt: skip
    merged, _ = strategy.aggregate_train(1, replies)
    # tau_eff = 1/4*1 + 3/4*4 = 3.25; step = 3.25 * (1/4*2/1 + 3/4*4/4) = 4.0625
    # (FedAvg's step would be 1/4*2 + 3/4*4 = 3.5)
    assert merged.to_numpy_ndarrays()[0] == pytest.approx([10.0 - 4.0625])


def test_fedper_keeps_each_head_on_its_client(monkeypatch):
    from flwr.app import RecordDict

    fedper = strategy_module("fedper", monkeypatch)
    task = sys.modules["task"]
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 6)).astype(np.float32), rng.integers(0, 3, 40)
    global_model = task.init_model(6, 3, 5, 0)
    state = RecordDict()
    config = {"local_epochs": 2, "batch": 8, "lr": 0.5, "seed": 0}
    sent, _ = fedper.client_train(global_model, x, y, config, 1, 0, state, {})
    head = state["head"].to_numpy_ndarrays()
    assert all(
        np.array_equal(a, b) for a, b in zip(sent[2:], global_model[2:], strict=True)
    )
    assert not np.allclose(head[0], global_model[2])  # trained, and kept here
    assert not np.allclose(
        sent[0], global_model[0]
    )  # the shared layer trained and is sent
    mine = fedper.client_model(global_model, state)
    assert np.array_equal(mine[2], head[0]) and np.array_equal(mine[0], global_model[0])


def test_fedprox_local_steps_match_autograd_of_the_proximal_objective(monkeypatch):
    strategy_module("fedprox", monkeypatch)
    task = sys.modules["task"]
    rng = np.random.default_rng(1)
    x, y = rng.random((30, 4)).astype(np.float32), rng.integers(0, 3, 30)
    start, mu, lr = task.init_model(4, 3, 5, 0), 0.7, 0.3
    trained, _ = task.train(
        start, x, y, steps=3, lr=lr, batch=100, seed=0, proximal_mu=mu
    )
    params = [torch.tensor(w, dtype=torch.float64, requires_grad=True) for w in start]
    anchors = [torch.tensor(w, dtype=torch.float64) for w in start]
    for _ in range(3):  # full batch: min(batch, n) rows, every row
        w1, b1, w2, b2 = params
        logits = torch.relu(torch.tensor(x, dtype=torch.float64) @ w1 + b1) @ w2 + b2
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
        loss = loss + mu / 2 * sum(
            ((p - a) ** 2).sum() for p, a in zip(params, anchors, strict=True)
        )
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p -= lr * g
    for mine, reference in zip(trained, params, strict=True):
        assert np.allclose(mine, reference.detach().numpy(), atol=1e-5)

"""FedNS against independent facts: the exact 1-D 2-means split equals
scikit-learn's KMeans; the clients' score equals torch autograd of the
label-free loss; the server's average, worked by hand, with the noisy group
found in round 1 kept afterwards."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans

from tests.helmsman.flower_parts import reply, strategy_module


@pytest.mark.parametrize("seed", range(5))
def test_two_means_is_the_kmeans_split(monkeypatch, seed):
    fedns = strategy_module("fedns", monkeypatch)
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.normal(3, 1, 6), rng.normal(9, 2, 5)])
    labels = (
        KMeans(n_clusters=2, n_init=10, random_state=0).fit(values[:, None]).labels_
    )
    low = labels == labels[np.argmin(values)]
    assert fedns.two_means(values.tolist()) == low.tolist()
    assert fedns.two_means([2.0, 2.0, 2.0]) == [False] * 3


def test_client_score_is_the_last_layer_gradient_of_the_label_free_loss(monkeypatch):
    fedns = strategy_module("fedns", monkeypatch)
    task = sys.modules["task"]
    rng = np.random.default_rng(0)
    weights = task.init_model(6, 4, 5, 0)
    x = rng.random((10, 6)).astype(np.float32)
    w1, b1, w2, b2 = (torch.tensor(w, dtype=torch.float64) for w in weights)
    w2.requires_grad_()
    norms = []
    for rows in (
        slice(0, 4),
        slice(4, 8),
        slice(8, 10),
    ):  # batches of 4, the last short
        logits = (
            torch.relu(torch.tensor(x[rows], dtype=torch.float64) @ w1 + b1) @ w2 + b2
        )
        loss = (-torch.log_softmax(logits, dim=1)).sum(1).mean()  # all-ones target
        (grad,) = torch.autograd.grad(loss, w2)
        norms.append(float(grad.abs().sum()))
    assert fedns.last_layer_norm(weights, x, 4) == pytest.approx(
        np.mean(norms), rel=1e-5
    )


def test_server_weighs_the_low_scoring_group_down_from_round_one_on(
    monkeypatch, in_a_run
):
    fedns = strategy_module("fedns", monkeypatch)
    strategy = fedns.FedNS(min_available_nodes=1)
    first = [reply([[v]], **{"num-examples": 10, "train_loss": 0.0, "partition": k, "grad_norm": g})
             for k, (v, g) in enumerate([(1.0, 10.0), (2.0, 11.0), (7.0, 2.0), (9.0, 3.0)])]  # fmt: skip
    merged, _ = strategy.aggregate_train(1, first)
    assert strategy.noisy == {2, 3}
    # (1.5*1 + 1.5*2 + 0.1*7 + 0.1*9) / (1.5 + 1.5 + 0.1 + 0.1) = 6.1 / 3.2
    assert merged.to_numpy_ndarrays()[0] == pytest.approx([6.1 / 3.2])
    later = [reply([[4.0]], **{"num-examples": 1, "train_loss": 0.0, "partition": 3}),
             reply([[0.0]], **{"num-examples": 1, "train_loss": 0.0, "partition": 9})]  # fmt: skip
    merged, _ = strategy.aggregate_train(
        2, later
    )  # no scores now; client 9 unseen: clean
    assert merged.to_numpy_ndarrays()[0] == pytest.approx([0.1 * 4.0 / 1.6])


def test_a_first_round_without_scores_flags_nobody(monkeypatch, in_a_run):
    fedns = strategy_module("fedns", monkeypatch)
    strategy = fedns.FedNS(min_available_nodes=1)
    replies = [reply([[v]], **{"num-examples": 1, "train_loss": 0.0, "partition": k})
               for k, v in enumerate([1.0, 3.0])]  # fmt: skip
    merged, _ = strategy.aggregate_train(2, replies)
    assert strategy.noisy == set() and merged.to_numpy_ndarrays()[0] == pytest.approx(
        [2.0]
    )

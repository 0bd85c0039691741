"""pass@k by hand, and its invariants."""

from __future__ import annotations

import pytest

from evoflow.evaluate.scaling import ks_for, pass_at_k, passk_metrics
from tests.helpers import make_episode


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 1, 1, 0.25),  # one success in four: a single draw finds it 1 time in 4
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (4, 2, 2, 5 / 6),  # 1 - C(2,2)/C(4,2) = 1 - 1/6
        (4, 0, 4, 0.0),
        (4, 1, 4, 1.0),
        (8, 3, 6, 1.0),  # fewer failures (5) than draws (6)
    ],
)
def test_pass_at_k_by_hand(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_grows_with_k_and_bad_counts_are_named():
    values = [pass_at_k(16, 3, k) for k in range(1, 17)]
    assert values == sorted(values)
    with pytest.raises(ValueError, match="n=4, c=5"):
        pass_at_k(4, 5, 1)


def test_metrics_average_over_tasks():
    episodes = [make_episode(task_id=t, success=s)
                for t, s in [("a", True), ("a", False), ("b", False), ("b", False)]]  # fmt: skip
    metrics = passk_metrics(episodes)
    assert metrics["samples"] == 2 and metrics["tasks"] == 2
    assert metrics["pass_at_k"] == {"1": 0.25, "2": 0.5}
    assert ks_for(64) == [1, 2, 4, 8, 16, 32, 64] and ks_for(6) == [1, 2, 4, 6]

"""Helmsman runs are scored outside the generated code: the sandbox never
sees the test labels, the host scores predictions against numbers worked by
hand, and the saved model must give the predictions the run reported."""

from __future__ import annotations

import io

import numpy as np
import pytest

from evoflow.helmsman import codebase
from evoflow.helmsman.scoring import Labels, history, withhold
from evoflow.helmsman.simulate import simulate
from evoflow.sandbox import Limits
from tests.helmsman.test_diagnose import _with

FAST = Limits(seconds=60, memory_mb=4096, output_kb=4096)

LOOK_FOR_LABELS = """\
import numpy as np
with np.load("data.npz") as _data:
    _found = [k for k in _data.files if k.startswith("y_test")]
assert not _found, f"the test labels reached the sandbox: {_found}"
"""


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_the_sandbox_gets_no_test_labels(digits_npz, run_config):
    modules = codebase.baseline()
    modules["run.py"] += LOOK_FOR_LABELS
    run = simulate(modules, digits_npz, run_config, FAST)
    assert run.diagnosis.ok, run.diagnosis.report()


def test_withhold_keeps_the_labels_and_passes_everything_else(digits_npz):
    features, labels = withhold(digits_npz)
    with np.load(io.BytesIO(digits_npz)) as full, np.load(io.BytesIO(features)) as seen:
        assert sorted(seen.files) == sorted(
            k for k in full.files if not k.startswith("y_test")
        )
        assert (labels.test == full["y_test"]).all()
        assert [len(c) for c in labels.clients] == [
            len(full[f"y_test_{k}"]) for k in range(4)
        ]
        assert (seen["x_test"] == full["x_test"]).all()


LABELS = Labels(np.array([0, 1, 1, 2]), (np.array([1, 0]), np.array([2, 2, 2])),
                np.array([0, 0, 1, 1]))  # fmt: skip


def test_rounds_are_scored_by_hand():
    payload = _npz(
        global_0=np.array([0, 0, 0, 0]),  # 1 of 4 right; task 0: 1/2, task 1: 0/2
        global_1=np.array([0, 1, 1, 0]),  # 3 of 4; task 0: 2/2, task 1: 1/2
        clients_1_0=np.array([1, 1]),  # 1 of 2
        clients_1_1=np.array([2, 2, 0]),  # 2 of 3
        tasks_1_0=np.array([0, 0, 1, 2]),  # task 0: 1/2, task 1: 2/2
        tasks_1_1=np.array([0, 1, 0, 0]),  # task 0: 2/2, task 1: 0/2
    )
    scores = history(payload, LABELS, rounds=1)
    assert scores.problem is None
    first, last = scores.rounds
    assert first == {"round": 0, "accuracy": 0.25, "task_accuracy": [0.5, 0.0]}
    assert last["client_accuracy"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    # per-task models: each task's accuracy is the clients' mean, accuracy their mean
    assert last["task_accuracy"] == pytest.approx([0.75, 0.5])
    assert last["accuracy"] == pytest.approx(0.625)
    assert (scores.last == [0, 1, 1, 0]).all()


@pytest.mark.parametrize(
    ("arrays", "words"),
    [
        ({"global_0": np.array([0, 1, 1])}, "shape (3,)"),
        ({"global_0": np.array([0.0, 1.0, 1.0, 2.0])}, "not class indices"),
        ({"global_0": np.zeros(4, int), "accuracy": np.array(1.0)}, "unknown key"),
        ({"global_0": np.zeros(4, int), "clients_0_5": np.zeros(2, int)}, "client 5"),
        ({"clients_0_0": np.zeros(2, int)}, "no global_<round>"),
        ({"global_01": np.zeros(4, int)}, "unknown key"),  # one spelling per round
        ({"global_0": np.zeros(4, int), "global_3": np.zeros(4, int)}, "past the last"),
        ({"global_0": np.zeros(4, int), "global_2": np.zeros(4, int)}, "round(s) [1]"),
        # a codebase may not choose which clients are scored
        (
            {"global_0": np.zeros(4, int), "clients_0_1": np.zeros(3, int)},
            "client(s) [0]",
        ),
    ],
)
def test_predictions_that_cannot_be_scored_are_named(arrays, words):
    scores = history(_npz(**arrays), LABELS, rounds=2)
    assert scores.rounds == [] and words in scores.problem, scores.problem
    assert "wrote no predictions.npz" in history(None, LABELS, 2).problem


MODEL_FAULTS = {
    # predict is told apart from the predictions the server wrote
    "predict disagrees": ("server_app.py", '    _save("predictions.npz", predictions)',
                          '    predictions = {k: (v + 1) % 10 for k, v in predictions.items()}\n'
                          '    _save("predictions.npz", predictions)', "disagrees"),
    "no model": ("server_app.py", '    _save("model.npz"', '    _save("other.npz"',
                 "saved no model.npz"),
}  # fmt: skip


@pytest.mark.parametrize("fault", MODEL_FAULTS)
def test_a_saved_model_that_does_not_give_the_predictions_fails(fault, digits_npz,
                                                               run_config):  # fmt: skip
    module, old, new, words = MODEL_FAULTS[fault]
    run = simulate(_with(module, old, new), digits_npz, run_config, FAST)
    assert run.diagnosis.level == 1, run.diagnosis.report()
    assert words in run.diagnosis.report(), run.diagnosis.report()


def test_a_predict_that_uses_another_module_of_the_codebase_is_checked_whole(
    digits_npz, run_config
):
    # the model check runs the codebase's own modules beside task.py
    modules = _with("task.py", "    return logits_of(weights, x.astype(np.float32))",
                    "    import strategy  # noqa: F401\n"
                    "    return logits_of(weights, x.astype(np.float32))")  # fmt: skip
    run = simulate(modules, digits_npz, run_config, FAST)
    assert run.diagnosis.ok, run.diagnosis.report()

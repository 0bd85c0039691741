"""evoflow.tracking against MLflow's own client: nesting, replacement on rerun,
nothing imported when off, and a failing store costs the job nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evoflow.tracking import curve, record, step_series, ui_command


def config(tmp_path, **tracking):
    return {"experiment": "exp", "tracking": {"mlflow": True,
            "uri": f"sqlite:///{tmp_path / 'mlflow.db'}", **tracking}}  # fmt: skip


def test_a_rerun_job_replaces_its_run_and_series_keep_their_steps(tmp_path):
    from mlflow import MlflowClient

    settings = config(tmp_path)
    first = record(settings, "fedse", 1, "train maze", {"lr": 0.1}, {"loss": 2.0})
    second = record(settings, "fedse", 1, "train maze", {"lr": 0.2},
                    {"loss": 1.0, "note": "text"},
                    {"reward": [(5, 0.5), (6, 0.75)]})  # fmt: skip
    record(settings, "fedse", 2, "aggregate", {"rule": "mean"}, {"bytes": {"up": 8}})

    client = MlflowClient(settings["tracking"]["uri"])
    exp = client.get_experiment_by_name("exp").experiment_id
    runs = client.search_runs([exp])
    names = sorted(r.info.run_name for r in runs)
    assert names == [
        "aggregate",
        "fedse",
        "fedse round 1",
        "fedse round 2",
        "train maze",
    ]
    (job,) = [r for r in runs if r.info.run_name == "train maze"]
    assert job.info.run_id == second != first
    assert job.data.params == {"lr": "0.2"} and job.data.metrics["loss"] == 1.0
    assert "note" not in job.data.metrics
    history = client.get_metric_history(second, "reward")
    assert sorted((m.step, m.value) for m in history) == [(5, 0.5), (6, 0.75)]
    (agg,) = [r for r in runs if r.info.run_name == "aggregate"]
    assert agg.data.metrics["bytes.up"] == 8
    rounds = {
        r.info.run_id: r for r in runs if r.info.run_name.startswith("fedse round")
    }
    method = next(r for r in runs if r.info.run_name == "fedse").info.run_id
    assert rounds[job.data.tags["mlflow.parentRunId"]].info.run_name == "fedse round 1"
    assert {r.data.tags["mlflow.parentRunId"] for r in rounds.values()} == {method}


def test_off_imports_nothing_and_a_broken_store_only_warns(tmp_path, caplog):
    probe = ("import sys; from evoflow.tracking import record; "
             "print(record({'experiment': 'e'}, 'm', 1, 'j', {}, {}), "
             "'mlflow' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.stdout.split() == ["None", "False"], out.stderr
    (tmp_path / "file").write_text("")
    broken = config(tmp_path, uri=f"sqlite:///{tmp_path / 'file' / 'mlflow.db'}")
    assert record(broken, "m", 1, "train maze", {}, {}) is None
    assert "not logged" in caplog.text and "train maze" in caplog.text


def test_series_helpers_and_the_ui_command():
    assert curve([3.0, 2.0]) == [(1, 3.0), (2, 2.0)]
    rows = [{"step": 4, "reward": 0.5, "note": "x"}, {"step": 5, "reward": 1.0}]
    assert step_series(rows) == {"reward": [(4, 0.5), (5, 1.0)]}
    command = ui_command({"experiment": "embedded"}, "/w")
    assert (
        "mlflow ui --backend-store-uri sqlite:////w/results/embedded/mlflow.db"
        in command
    )
    with pytest.raises(KeyError):
        ui_command({})

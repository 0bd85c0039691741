"""The server step's options through the workflow on the tiny model: DP
clips against the adapter the clients really started from (round 1: the
fresh LoRA, rebuilt), ε grows with the rounds, server momentum keeps its
velocity, and exact aggregation with a bf16 uplink and half the clients
records who took part."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from evoflow.config import load_config
from evoflow.methods.registry import methods_from_config
from evoflow.train.sft_trainer import initial_adapter
from tests.workflow.conftest import ROOT, snakemake

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_fed_options.yaml"
RESULTS = "results/tiny-fed-options"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("fed-options")
    snakemake(workdir, config=CONFIG)
    return workdir


def _comm(run, method: str, round: int) -> dict:
    return json.loads(
        (run / f"{RESULTS}/{method}/round={round}/global/comm.json").read_text()
    )


def test_dp_clips_against_the_start_and_accounts_epsilon(run):
    first, second = (_comm(run, "fedse_private", r) for r in (1, 2))
    assert 0 < first["dp"]["epsilon"] < second["dp"]["epsilon"] < float("inf")
    assert first["dp"]["noise"] == "simulation, seeded" and first["dp"]["divisor"] == 2
    assert "update_norms" not in first["dp"] and "reconstruction_error" not in first
    method = methods_from_config(load_config(CONFIG))["fedse_private"]
    start = initial_adapter("tiny-random-llama", method.sft_for(1, "maze"))
    folder = run / f"{RESULTS}/fedse_private/round=1/global/adapter"
    merged = load_file(folder / "adapter_model.safetensors")
    moved = sum(float(((merged[k] - start[k]) ** 2).sum()) for k in start) ** 0.5
    assert (
        moved < 1e-5
    )  # clipped to 1e-6 around the rebuilt start: it is the real start
    assert (folder / "server_velocity.safetensors").is_file()


def test_exact_aggregation_with_bf16_and_half_the_clients(run):
    for round in (1, 2):
        comm = _comm(run, "fedse_exact", round)
        assert len(comm["participants"]) == 1 and len(comm["not_sampled"]) == 1
        assert comm["uplink"] == "bf16" and comm["aggregation"]["rule"] == "exact"
        assert comm["uplink_bytes_per_client"] == 2 * comm["parameters_per_adapter"]
        errors = comm["reconstruction_error"]
        assert errors["exact"] == pytest.approx(
            0.0, abs=1e-5
        )  # one client: exact is exact
    merged = load_file(
        run / f"{RESULTS}/fedse_exact/round=2/global/adapter/adapter_model.safetensors"
    )
    assert all(torch.isfinite(t).all() for t in merged.values())


def test_the_report_labels_curves_with_bytes_and_epsilon(run):
    from evoflow.methods.layout import Layout
    from evoflow.report.build import server_summary

    methods = methods_from_config(load_config(CONFIG))
    layout = Layout(str(run / RESULTS))
    params = _comm(run, "fedse_exact", 1)["parameters_per_adapter"]
    # two rounds, one client each, bf16: 2 bytes per parameter
    expected = 2 * 1 * 2 * params / 2**20
    assert (
        server_summary(layout, "fedse_exact", methods["fedse_exact"])
        == f"{expected:.1f} MiB up"
    )
    private = server_summary(layout, "fedse_private", methods["fedse_private"])
    epsilon = _comm(run, "fedse_private", 2)["dp"]["epsilon"]
    assert private == f"{2 * 2 * 4 * params / 2**20:.1f} MiB up, ε = {epsilon:.3g}"


def test_every_job_is_an_mlflow_run_nested_by_method_and_round(run):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{run / RESULTS / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tiny-fed-options")
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    by_id = {r.info.run_id: r for r in runs}

    def path(r):  # the run's name, its round's, its method's
        names = [r.info.run_name]
        while "mlflow.parentRunId" in r.data.tags:
            r = by_id[r.data.tags["mlflow.parentRunId"]]
            names.append(r.info.run_name)
        return tuple(reversed(names))

    paths = {path(r) for r in runs}
    for method in ("fedse_private", "fedse_exact"):
        for round in (1, 2):
            assert (method, f"{method} round {round}", "aggregate") in paths
    for round in (1, 2):
        for env in ("maze", "wordle"):
            assert (
                "fedse_private",
                f"fedse_private round {round}",
                f"train {env}",
            ) in paths
    assert ("fedse_private", "fedse_private round 2", "evaluate") in paths

    # a training run carries the adapter's own numbers, its loss curve included
    (train,) = [
        r for r in runs if path(r)[1:] == ("fedse_private round 1", "train maze")
    ]
    folder = run / f"{RESULTS}/fedse_private/round=1/client=maze/adapter"
    summary = json.loads((folder / "training.json").read_text())
    assert train.data.params["learning_rate"] == "0.001"
    assert train.data.metrics["optimizer_steps"] == summary["optimizer_steps"]
    losses = client.get_metric_history(train.info.run_id, "loss")
    assert [m.value for m in sorted(losses, key=lambda m: m.step)] == pytest.approx(
        summary["loss_curve"]
    )
    (aggregate,) = [
        r for r in runs if path(r)[1:] == ("fedse_private round 2", "aggregate")
    ]
    assert aggregate.data.metrics["dp.epsilon"] == pytest.approx(
        _comm(run, "fedse_private", 2)["dp"]["epsilon"]
    )

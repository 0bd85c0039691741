"""Fed-SE as a real Flower deployment on localhost (a SuperLink and one
SuperNode process per client, `flwr run`), checked against the Snakemake
simulation of the same config: the same global adapters, nothing but adapter
records on the wire, and a lost client handled as configured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from safetensors.torch import load_file

from evoflow.errors import EvoflowError
from evoflow.federate.launch import federate
from tests.workflow.conftest import ROOT, snakemake

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_federate.yaml"
RESULTS = "results/tiny-federate/fedse"
LOST_REASONS = ("Node Unavailable", "Reply message objects are unavailable")
ADAPTER = "global/adapter/adapter_model.safetensors"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("simulated")
    snakemake(workdir, f"{RESULTS}/round=2/global/adapter", config=CONFIG)
    return workdir


@pytest.fixture(scope="module")
def federated(tmp_path_factory) -> Path:
    """The deployment, started through the command line."""
    workdir = tmp_path_factory.mktemp("federated")
    run = subprocess.run(
        [sys.executable, "-m", "evoflow.cli", "federate", "--config", str(CONFIG),
         "--method", "fedse", "--workdir", str(workdir), "--timeout", "600"],
        capture_output=True, text=True, timeout=700,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "round 2:" in run.stdout and "clients: maze, wordle" in run.stdout
    return workdir


def assert_same_global_adapters(federated: Path, simulated: Path, results: str) -> None:
    """Rounds 1 and 2's global adapters of both runs agree to 1e-6."""
    for round in (1, 2):
        ours = load_file(federated / f"{results}/round={round}/{ADAPTER}")
        theirs = load_file(simulated / f"{results}/round={round}/{ADAPTER}")
        assert ours.keys() == theirs.keys()
        for name, tensor in theirs.items():
            torch.testing.assert_close(ours[name], tensor, rtol=0, atol=1e-6)


def test_global_adapters_equal_the_simulation(simulated, federated):
    assert_same_global_adapters(federated, simulated, RESULTS)
    first = load_file(federated / f"{RESULTS}/round=1/{ADAPTER}")
    second = load_file(federated / f"{RESULTS}/round=2/{ADAPTER}")
    assert any(not torch.equal(first[k], second[k]) for k in first)  # round 2 learned
    comm = json.loads((federated / f"{RESULTS}/round=2/global/comm.json").read_text())
    sim = json.loads((simulated / f"{RESULTS}/round=2/global/comm.json").read_text())
    for key in ("participants", "parameters_per_adapter", "cumulative_bytes", "lost"):
        assert comm[key] == sim[key], key


def _texts(shard: Path) -> set[str]:
    """Every episode id and message of a shard (long enough to be telling)."""
    table = pq.read_table(shard, columns=["episode_id", "messages"]).to_pylist()
    found = set()
    for row in table:
        found.add(row["episode_id"])
        found |= {m["content"] for m in row["messages"] if len(m["content"]) >= 12}
    return found


def test_only_adapter_records_cross_the_wire(federated):
    server = federated / RESULTS
    assert not list(
        (federated / "results").rglob("*.parquet")
    )  # no trajectory reached it
    explored = list((federated / "clients").rglob("explore.parquet"))
    assert len(explored) == 4  # each client kept its own episodes, 2 rounds
    secrets = set().union(*(_texts(p) for p in explored))
    assert secrets
    params = json.loads((server / "round=1/global/comm.json").read_text())[
        "parameters_per_adapter"
    ]
    for round in (1, 2):
        lines = (server / f"round={round}/global/wire.jsonl").read_text().splitlines()
        assert len(lines) == 2
        for line in lines:
            records = json.loads(line)["records"]
            assert {n: r["type"] for n, r in records.items()} == {
                "adapter": "ArrayRecord", "adapter_meta": "ConfigRecord",
                "counts": "MetricRecord",
            }  # fmt: skip
            # fp32 tensors: 4 bytes a parameter, plus a small header per array
            arrays = len(records["adapter"]["keys"])
            assert (
                4 * params <= records["adapter"]["bytes"] <= 4 * params + 200 * arrays
            )
            assert set(records["adapter_meta"]["values"]) == {
                "client",
                "config",
                "dtype",
            }
            text = line
            assert not any(secret in text for secret in secrets)


def _kill_when_round_starts(client: str, round: int, workdir: Path, restart=False):
    started = workdir / "clients" / client / f"{RESULTS}/round={round}"
    killed = []

    def monitor(federation):
        if not killed and started.exists():
            if restart:
                federation.restart(f"supernode-{client}")
            else:
                federation.stop(f"supernode-{client}")
            killed.append(client)

    return monitor


def test_a_lost_client_leaves_its_round_and_is_readmitted_when_it_restarts(tmp_path):
    # wordle's SuperNode is killed in round 1 and started again at once: it
    # joins under a new node id, and the server takes it back for round 2
    monitor = _kill_when_round_starts("wordle", 1, tmp_path, restart=True)
    summary = federate(CONFIG, "fedse", tmp_path, allow_partial=True, round_timeout=120,
                       timeout=600, monitor=monitor)  # fmt: skip
    assert [r["participants"] for r in summary["rounds"]] == [
        ["maze"],
        ["maze", "wordle"],
    ]
    comm = json.loads((tmp_path / f"{RESULTS}/round=1/global/comm.json").read_text())
    assert comm["participants"] == ["maze"] and list(comm["lost"]) == ["wordle"]
    # Flower names the loss by when the kill lands: before the reply (the node is
    # unavailable) or while its reply was being uploaded (the reply is missing)
    assert any(reason in comm["lost"]["wordle"] for reason in LOST_REASONS)
    log = (tmp_path / "federation/tiny-federate/fedse/logs/run.log").read_text()
    assert "client wordle re-admitted as node" in log


def test_a_client_of_another_rank_is_refused_and_a_lost_one_named(tmp_path):
    # round 2: maze is killed; wordle's own trainer refuses to resume the rank-8
    # global adapter at rank 4, and says so
    with pytest.raises(EvoflowError, match=r"round 2: client\(s\) maze, wordle lost.*"
                       r"maze: client error: .*Node Unavailable.*asks for r=4"):  # fmt: skip
        federate(CONFIG, "fedse", tmp_path, round_timeout=120, timeout=600,
                 node_config={"wordle": "train.lora_r=4"},
                 monitor=_kill_when_round_starts("maze", 2, tmp_path))  # fmt: skip
    comm = json.loads((tmp_path / f"{RESULTS}/round=1/global/comm.json").read_text())
    assert comm["participants"] == ["maze"]
    assert "r is 4" in comm["refused"]["wordle"]
    log = (tmp_path / "federation/tiny-federate/fedse/logs/run.log").read_text()
    assert "client wordle refused" in log


def test_federated_rl_runs_as_a_deployment_and_equals_the_simulation(tmp_path):
    # federated GRPO from a fresh LoRA: each SuperNode runs its RL span from the
    # server's adapter and its own state of last round; the server averages
    rl = "results/tiny-federate/fedrl"
    simulated = tmp_path / "simulated"
    snakemake(simulated, f"{rl}/round=2/global/adapter", config=CONFIG)
    federated = tmp_path / "federated"
    summary = federate(CONFIG, "fedrl", federated, timeout=600)
    assert [r["participants"] for r in summary["rounds"]] == [["maze", "wordle"]] * 2
    assert_same_global_adapters(federated, simulated, rl)
    client = federated / "clients/wordle" / rl / "round=2/client=wordle"
    state = torch.load(client / "state.pt", weights_only=False)
    moments = next(iter(state["optimizer"]["state"].values()))
    assert float(moments["step"]) == 2  # AdamW's 1 + 1: it resumed its round-1 state
    assert not list((federated / "results").rglob("*.parquet"))  # episodes stay home
    assert len(list((federated / "clients").rglob("rollouts.parquet"))) == 4

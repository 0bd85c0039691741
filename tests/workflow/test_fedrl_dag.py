"""Federated multi-turn RL's DAG on the tiny model: per round, one RL span per
client on its own env from the server's adapter and the client's own state;
the server averages adapters only; every round is evaluated; resume.

``tiny_fedrl.yaml``: clients textcraft and doors, 2 rounds of 2 steps each;
GRPO and GiGPO (server momentum 0.5) from AgentTraj-SFT, PPO from a fresh LoRA.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from evoflow.store.shards import read_shard
from tests.workflow.conftest import ROOT, dry_run_jobs, planned_jobs, run_log, snakemake
from tests.workflow.queue import replay

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_fedrl.yaml"
RESULTS = "results/tiny-fedrl"
CLIENTS = ("textcraft", "doors")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("fedrl")
    snakemake(workdir, config=CONFIG)
    return workdir


def client(run, method: str, round: int, env: str):
    return run / f"{RESULTS}/{method}/round={round}/client={env}"


def weights(folder) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "adapter_model.safetensors"))


def test_each_client_plays_its_own_env_and_its_steps_run_on_across_rounds(run):
    for env in CLIENTS:
        for round, steps in ((1, [0, 1]), (2, [2, 3])):
            folder = client(run, "fedrl_grpo", round, env)
            rows = read_shard(folder / "rollouts.parquet").to_pylist()
            # 2 steps x 2 tasks x 2 samples, all of the client's env
            assert len(rows) == 8 and {r["env"] for r in rows} == {env}
            metrics = json.loads((folder / "metrics.json").read_text())
            assert [s["step"] for s in metrics["steps"]] == steps
            assert all(s["updated"] for s in metrics["steps"])
            assert list(metrics["steps"][0]["horizon"]) == [env]


def test_a_client_keeps_its_optimizer_and_reference_across_rounds(run):
    sft = weights(run / f"{RESULTS}/agenttraj_sft/round=1/global/adapter")
    state = torch.load(client(run, "fedrl_grpo", 2, "doors") / "state.pt",
                       weights_only=False)  # fmt: skip
    assert state["step"] == 4
    moments = next(iter(state["optimizer"]["state"].values()))
    assert float(moments["step"]) == 4  # AdamW's 2 + 2 updates, not 2 after a reset
    reference = state["reference"]["weights"]  # the KL reference: the SFT start
    assert reference and all(
        torch.equal(reference[k].float(), sft[k].float()) for k in reference
    )
    # PPO from a fresh LoRA: the reference stays the base model, and the critic's
    # moments run on across rounds with the LoRA's
    ppo = torch.load(
        client(run, "fedrl_ppo", 2, "doors") / "state.pt", weights_only=False
    )
    assert ppo["reference"] is None and ppo["critic"] is not None
    steps = {float(s["step"]) for s in ppo["optimizer"]["state"].values()}
    assert steps == {4.0} and len(ppo["optimizer"]["param_groups"]) == 2


def test_the_global_adapter_is_the_mean_of_the_client_adapters(run):
    for round in (1, 2):
        ours = weights(run / f"{RESULTS}/fedrl_grpo/round={round}/global/adapter")
        clients = [
            weights(client(run, "fedrl_grpo", round, e) / "adapter") for e in CLIENTS
        ]
        assert set(ours) == set(clients[0])
        for key, value in ours.items():
            mean = (clients[0][key].double() + clients[1][key].double()) / 2
            assert torch.allclose(value.double(), mean, atol=1e-6), key
        assert not torch.equal(clients[0][key], clients[1][key])  # they trained apart


def test_rounds_are_evaluated_from_the_start_agent(run):
    def sha(method, round):
        path = run / f"{RESULTS}/{method}/round={round}/eval/env=doors/metrics.json"
        return json.loads(path.read_text())["adapter_sha256"]

    # from rl.init, round 0 is AgentTraj-SFT's own evaluation (not played again)
    assert not (run / f"{RESULTS}/fedrl_grpo/round=0").exists()
    assert sha("fedrl_ppo", 0) is None  # a fresh LoRA's start is the base model
    starts = [sha("agenttraj_sft", 1), sha("fedrl_grpo", 1), sha("fedrl_grpo", 2)]
    assert None not in starts and len(set(starts)) == 3
    table = (run / "reports/tiny-fedrl/table1.md").read_text()
    # every round of the by-round table: none of its 4 test episodes, with the
    # Wilson interval of 0 of 4 ([0.0, 49.0])
    cell = "0.0 (0/4) [0.0, 49.0]"
    assert (
        f"| FedRL (fedrl_gigpo) | {cell} | {cell} | {cell} |"
        in table.split("by round")[1]
    )
    comm = json.loads(
        (run / f"{RESULTS}/fedrl_gigpo/round=2/global/comm.json").read_text()
    )
    assert comm["aggregation"]["server_momentum"] == 0.5 and comm["clients"] == 2


def test_a_lost_client_span_reruns_alone_and_the_server_reads_adapters_only(
    run, tmp_path
):
    copy = tmp_path / "run"
    shutil.copytree(run, copy, symlinks=True)
    assert planned_jobs(copy, config=CONFIG) == []
    shutil.rmtree(client(copy, "fedrl_grpo", 2, "doors"))
    jobs = dry_run_jobs(snakemake(copy, "-n", config=CONFIG).stdout)
    spans = [job["output"][0] for job in jobs if job["rule"] == "rl_client_span"]
    assert spans == [f"{RESULTS}/fedrl_grpo/round=2/client=doors/adapter"]
    assert sorted({job["rule"] for job in jobs}) == [
        "aggregate", "evaluate", "report", "rl_client_span"
    ]  # fmt: skip
    (server,) = [job for job in jobs if job["rule"] == "aggregate"]
    assert sorted(server["input"]) == [
        f"{RESULTS}/fedrl_grpo/round=1/global/comm.json",
        *(f"{RESULTS}/fedrl_grpo/round=2/client={e}/adapter" for e in sorted(CLIENTS)),
    ]


def test_every_job_another_waits_on_goes_first(run):
    # a job whose output another job (not a report) reads carries the chain
    # priority, and no job of priority 0 started while one of those waited
    queue = replay(run_log(run))
    assert queue.jumps == [] and queue.unprioritised == []

"""The server step's options against hand-worked numbers and independent
computations: exact LoRA aggregation vs a dense SVD in numpy, DP-FedAvg's
clipping, noise and ε (RDP of the Gaussian mechanism written out), FedAvgM,
seeded participation, the straggler deadline and the bf16 uplink."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from evoflow.fed import aggregate_adapters
from evoflow.fed.accountant import ORDERS
from evoflow.fed.comm import over_the_wire, round_traffic
from evoflow.fed.exact import exact_mean
from evoflow.fed.participation import on_time, sample_clients
from evoflow.fed.privacy import clip_update, epsilon, private_mean
from evoflow.fed.server_opt import momentum_step
from evoflow.fed.settings import AggregationSettings
from tests.fed.test_aggregate import write_adapter

A, B = "m.q_proj.lora_A.weight", "m.q_proj.lora_B.weight"


def lora(b, a) -> dict:
    return {
        A: torch.tensor(a, dtype=torch.float32),
        B: torch.tensor(b, dtype=torch.float32),
    }


def test_exact_mean_worked_by_hand():
    # ΔW1 = diag(2, 0), ΔW2 = diag(0, 1): the mean is diag(1, 0.5)
    states = [lora([[2.0], [0.0]], [[1.0, 0.0]]), lora([[0.0], [1.0]], [[0.0, 1.0]])]
    merged, errors = exact_mean(states)
    assert torch.allclose(
        merged[B] @ merged[A], torch.tensor([[1.0, 0.0], [0.0, 0.0]]), atol=1e-6
    )
    # rank 1 keeps diag(1, 0): lost 0.5 of ‖diag(1, .5)‖ = √1.25
    assert errors["exact"] == pytest.approx(0.5 / math.sqrt(1.25))
    # mean(B)·mean(A) = [[.5, .5], [.25, .25]]: off by √0.625
    assert errors["naive"] == pytest.approx(math.sqrt(0.625) / math.sqrt(1.25))
    full, errors = exact_mean(states, rank=2)
    assert torch.allclose(
        full[B] @ full[A], torch.tensor([[1.0, 0.0], [0.0, 0.5]]), atol=1e-6
    )
    assert errors["exact"] == pytest.approx(0.0, abs=1e-7)


def test_exact_mean_is_the_best_rank_r_fit_of_the_dense_weighted_mean():
    rng = np.random.default_rng(0)
    weights = [1.0, 2.0, 5.0]
    states = [lora(rng.normal(size=(7, 2)), rng.normal(size=(2, 5))) for _ in weights]
    merged, errors = exact_mean(states, weights)
    dense = sum(w * (s[B].numpy().astype(np.float64) @ s[A].numpy()) for w, s in
                zip(weights, states, strict=True)) / sum(weights)  # fmt: skip
    u, sigma, vt = np.linalg.svd(dense)
    best = (u[:, :2] * sigma[:2]) @ vt[:2]
    assert np.allclose((merged[B] @ merged[A]).numpy(), best, atol=1e-5)
    assert errors["exact"] == pytest.approx(
        np.linalg.norm(dense - best) / np.linalg.norm(dense)
    )
    naive = (sum(w * s[B].numpy() for w, s in zip(weights, states, strict=True)) / 8) @ (
        sum(w * s[A].numpy() for w, s in zip(weights, states, strict=True)) / 8)  # fmt: skip
    assert errors["naive"] == pytest.approx(
        np.linalg.norm(dense - naive) / np.linalg.norm(dense), rel=1e-5
    )
    assert errors["exact"] < errors["naive"]


def test_dp_clips_each_update_and_adds_noise_of_the_stated_scale():
    big = {"w": torch.tensor([3.0, 4.0])}  # norm 5
    clipped, norm = clip_update(big, 1.0)
    assert norm == 5.0 and torch.allclose(
        clipped["w"], torch.tensor([0.6, 0.8], dtype=torch.float64)
    )
    small = {"w": torch.tensor([0.3, 0.0])}
    noiseless = torch.Generator().manual_seed(0)
    silent = private_mean([big, small], 1.0, 0.0, noiseless, divisor=2)
    assert torch.allclose(silent["w"], torch.tensor([0.45, 0.4], dtype=torch.float64))
    # m = 4 sampled, 2 answered: the missing two count as zero updates
    fixed = private_mean([big, small], 1.0, 0.0, noiseless, divisor=4)
    assert torch.allclose(fixed["w"], torch.tensor([0.225, 0.2], dtype=torch.float64))
    updates = [{"w": torch.zeros(200_000)} for _ in range(4)]
    noisy = private_mean(updates, 2.0, 1.5, torch.Generator().manual_seed(0), divisor=4)
    assert float(noisy["w"].std()) == pytest.approx(1.5 * 2.0 / 4, rel=0.01)  # σ·C/m
    with pytest.raises(ValueError, match="divisor 1 is below the 2 updates"):
        private_mean([big, small], 1.0, 0.0, noiseless, divisor=1)


def test_epsilon_is_the_rdp_of_the_gaussian_mechanism():
    # replace-one neighbours: sensitivity 2C, so z = σ/2; T rounds of the Gaussian
    # mechanism have RDP T·α/(2z²); converted with log1p(−1/α) − (log δ + log α)/(α − 1)
    sigma, rounds, delta = 2.0, 10, 1e-5
    z = sigma / 2
    by_hand = min(rounds * a / (2 * z * z) + math.log1p(-1 / a)
                  - (math.log(delta) + math.log(a)) / (a - 1) for a in ORDERS)  # fmt: skip
    assert epsilon(sigma, rounds, 4, 4, delta) == pytest.approx(by_hand, rel=1e-9)
    assert epsilon(sigma, rounds, 10, 6, delta) < epsilon(sigma, rounds, 10, 10, delta)
    assert epsilon(0.0, rounds, 4, 4, delta) == math.inf


def test_server_momentum_worked_by_hand():
    first, velocity = momentum_step({"w": torch.tensor([0.0])}, {"w": torch.tensor([1.0])},
                                    None, beta=0.9)  # fmt: skip
    assert float(first["w"]) == 1.0 and float(velocity["w"]) == 1.0
    second, velocity = momentum_step(
        first, {"w": torch.tensor([1.5])}, velocity, beta=0.9
    )
    assert float(velocity["w"]) == pytest.approx(0.9 + 0.5)  # β·v + Δ
    assert float(second["w"]) == pytest.approx(2.4)


def test_participation_is_seeded_and_the_deadline_drops_stragglers():
    clients = [f"c{k}" for k in range(10)]
    picked = sample_clients(clients, 0.6, seed=3, round=2)
    assert len(picked) == 6 and picked == sample_clients(clients, 0.6, seed=3, round=2)
    assert picked == [c for c in clients if c in picked]  # in the clients' order
    rounds = {tuple(sample_clients(clients, 0.6, seed=3, round=r)) for r in range(1, 6)}
    assert len(rounds) > 1
    assert sample_clients(clients, 1.0, 3, 1) == clients
    assert on_time({"a": 5.0, "b": 61.0}, 60.0) == (["a"], ["b"])


def test_bf16_uplink_rounds_what_crosses_the_wire_and_halves_bytes():
    sent = over_the_wire({"w": torch.tensor([1.0 + 2**-10, 3.0])}, "bf16")
    assert sent["w"].tolist() == [1.0, 3.0] and sent["w"].dtype == torch.float32
    traffic = round_traffic(1000, 2, "bf16")
    assert (
        traffic["uplink_bytes_per_client"] == 2000
        and traffic["paper_up_mib_fp32"] == 76.25
    )


def test_the_server_step_records_who_took_part(tmp_path):
    clients = [
        write_adapter(tmp_path / f"client={k}" / "adapter", 1.0 + k) for k in range(5)
    ]
    for k, folder in enumerate(clients):
        (folder / "training.json").write_text(
            json.dumps({"seconds": 100.0 if k == 4 else 5.0})
        )
    settings = AggregationSettings(participation=0.6, deadline_s=60.0)
    record = aggregate_adapters(clients, tmp_path / "g", tmp_path / "c.json", round=1,
                                settings=settings, seed=0)  # fmt: skip
    sampled = sample_clients([str(k) for k in range(5)], 0.6, 0, 1)
    assert record["participants"] == [c for c in sampled if c != "4"]
    assert record["stragglers"] == ({"4": 100.0} if "4" in sampled else {})
    assert sorted(record["not_sampled"]) == sorted(
        set(map(str, range(5))) - set(sampled)
    )
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    expected = np.mean([1.0 + int(c) for c in record["participants"]])
    assert float(merged[sorted(merged)[0]].flatten()[0]) == pytest.approx(expected)


def test_a_lost_client_still_counts_in_the_sample_and_the_federation(tmp_path):
    """A live federation's round: client 2 of 0..4 never answered. The sample
    is drawn from all five (as if it had), and the lost one is named."""
    names = [str(k) for k in range(5)]
    folders = [write_adapter(tmp_path / f"client={k}" / "adapter", 1.0 + int(k))
               for k in names if k != "2"]  # fmt: skip
    settings = AggregationSettings(participation=0.6)
    record = aggregate_adapters(folders, tmp_path / "g", tmp_path / "c.json", round=3,
                                settings=settings, seed=1, clients=names,
                                lost={"2": "no reply within 60 s"})  # fmt: skip
    # seed 1, round 3 draws 0, 2, 4 of the five (drawn from the four who
    # answered it would be 0 and 3)
    assert sample_clients(names, 0.6, 1, 3) == ["0", "2", "4"]
    assert record["participants"] == ["0", "4"]
    assert record["not_sampled"] == ["1", "3"]
    assert record["lost"] == {"2": "no reply within 60 s"}


def test_dp_and_momentum_run_from_the_reference_adapter(tmp_path):
    start = write_adapter(tmp_path / "start", 1.0)
    clients = [
        write_adapter(tmp_path / f"client={k}" / "adapter", 1.0 + k) for k in range(2)
    ]
    dp = AggregationSettings(dp_clip=1e-3, dp_noise=0.0)
    record = aggregate_adapters(clients, tmp_path / "g", tmp_path / "c.json", round=1,
                                settings=dp, reference=start)  # fmt: skip
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    moved = (
        sum(float(((t - 1.0 * torch.sign(t)) ** 2).sum()) for t in merged.values())
        ** 0.5
    )
    assert moved <= 1e-3 + 1e-6  # each update clipped to 1e-3, so is their mean
    assert record["dp"]["epsilon"] == math.inf and record["dp"]["divisor"] == 2
    assert record["dp"]["noise"] == "simulation, seeded"
    # nothing per client under DP: no norms, no reconstruction errors
    assert "update_norms" not in record["dp"] and "reconstruction_error" not in record
    with pytest.raises(ValueError, match="need the adapter the clients started from"):
        aggregate_adapters(
            clients, tmp_path / "g2", tmp_path / "c2.json", settings=dp, round=1
        )
    with pytest.raises(ValueError, match="DP averages the clients unweighted"):
        aggregate_adapters(clients, tmp_path / "g3", tmp_path / "c3.json", "weighted", [1, 2],
                           round=1, settings=dp, reference=start)  # fmt: skip
    momentum = AggregationSettings(server_momentum=0.5)
    aggregate_adapters(clients, tmp_path / "m1", tmp_path / "m1.json", settings=momentum,
                       reference=start)  # fmt: skip
    assert (tmp_path / "m1" / "server_velocity.safetensors").is_file()


def test_exact_mean_keeps_a_direction_where_the_mean_is_zero():
    # every client's B still zero (no step taken): the mean of B·A is 0, yet A must stay
    # usable — a zero row in both factors would never get a gradient again
    states = [lora([[0.0], [0.0]], [[1.0, 2.0]]), lora([[0.0], [0.0]], [[3.0, -1.0]])]
    merged, _ = exact_mean(states)
    assert torch.count_nonzero(merged[B]) == 0
    assert float(merged[A].norm()) == pytest.approx(1.0)


def test_settings_name_what_is_wrong():
    with pytest.raises(ValueError, match="rule 'svd' is not one of"):
        AggregationSettings(rule="svd")
    with pytest.raises(ValueError, match="momentum steps on the naive average"):
        AggregationSettings(rule="exact", server_momentum=0.9)
    with pytest.raises(ValueError, match="dp_noise needs dp_clip"):
        AggregationSettings(dp_noise=1.0)
    with pytest.raises(ValueError, match="participation 0 is not in"):
        AggregationSettings(participation=0)
    with pytest.raises(ValueError, match="unknown keys \\['momentum'\\]"):
        AggregationSettings.from_config({"fed": {"aggregation": {"momentum": 0.9}}})
    merged = AggregationSettings.from_config({"fed": {"aggregation": {"rule": "exact"}}},
                                             {"aggregation": {"uplink": "bf16"}})  # fmt: skip
    assert (merged.rule, merged.uplink) == ("exact", "bf16")


def test_dp_divides_by_the_sampled_count_and_takes_no_sampling_discount(tmp_path):
    # Prepare: start 1.0; clients 0 and 1 answer with 2.0 and 3.0, client 2 is lost
    start = write_adapter(tmp_path / "start", 1.0)
    clients = [
        write_adapter(tmp_path / f"client={k}" / "adapter", 2.0 + k) for k in range(2)
    ]
    exact = AggregationSettings(dp_clip=1e6, dp_noise=0.0)
    noisy = AggregationSettings(dp_clip=1e6, dp_noise=1.0, participation=0.67)

    # Execute
    record = aggregate_adapters(clients, tmp_path / "g", tmp_path / "c.json", round=1,
                                settings=exact, reference=start, clients=["0", "1", "2"],
                                lost={"2": "no reply"})  # fmt: skip
    sampled = aggregate_adapters(clients, tmp_path / "s", tmp_path / "s.json", round=1,
                                 settings=noisy, reference=start, clients=["0", "1", "2"])  # fmt: skip
    deployed = [aggregate_adapters(clients, tmp_path / f"d{k}", tmp_path / f"d{k}.json",
                                   round=1, settings=noisy, reference=start, seed=None,
                                   clients=["0", "1", "2"])  # fmt: skip
                for k in range(2)]  # fmt: skip

    # Assert: updates +1 and +2 over m = 3 (the lost client a zero): 1 + 3/3 = 2
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    assert all(t.abs().max() == pytest.approx(2.0) for t in merged.values())
    assert record["dp"]["divisor"] == 3
    # 2 of 3 sampled and published: ε is that of every client every round (q = 1)
    assert sampled["dp"]["epsilon"] == pytest.approx(epsilon(1.0, 1, 3, 3, 1e-5))
    assert sampled["dp"]["epsilon"] > epsilon(1.0, 1, 3, 2, 1e-5)
    # a deployment draws noise from the OS: two runs of the same round differ
    assert [d["dp"]["noise"] for d in deployed] == ["os randomness"] * 2
    first, second = (load_file(tmp_path / f"d{k}" / "adapter_model.safetensors")
                     for k in range(2))  # fmt: skip
    assert any(not torch.equal(first[k], second[k]) for k in first)


def test_a_deployment_draws_its_sample_from_the_os():
    clients = [str(k) for k in range(20)]
    seeded = {tuple(sample_clients(clients, 0.5, 7, 1)) for _ in range(5)}
    drawn = {tuple(sample_clients(clients, 0.5, None, 1)) for _ in range(5)}
    assert len(seeded) == 1 and len(drawn) > 1
    assert all(len(d) == 10 and list(d) == sorted(d, key=int) for d in drawn)


def test_round_one_momentum_starts_from_no_velocity_whatever_its_reference_holds(
    tmp_path,
):
    # a federated RL method's round 1 starts from another method's final adapter,
    # which may carry that method's own server velocity: it must not carry over
    start = write_adapter(tmp_path / "start", 1.0)
    (tmp_path / "start" / "server_velocity.safetensors").write_bytes(
        (tmp_path / "start" / "adapter_model.safetensors").read_bytes()
    )  # a velocity of 1.0 everywhere
    clients = [
        write_adapter(tmp_path / f"client={k}" / "adapter", 2.0) for k in range(2)
    ]
    momentum = AggregationSettings(server_momentum=0.5)
    aggregate_adapters(clients, tmp_path / "g", tmp_path / "c.json", round=1,
                       settings=momentum, reference=start)  # fmt: skip
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    client = load_file(tmp_path / "client=0" / "adapter" / "adapter_model.safetensors")
    # A: Δ = 2 - 1 = 1, velocity 0.5·0 + 1 = 1, so the global A is 1 + 1 = 2, the
    # clients' own (with the stale velocity 1 + 0.5·1 + 1 = 2.5); B likewise at -2
    assert merged.keys() == client.keys()
    assert all(torch.allclose(merged[k], client[k]) for k in client)

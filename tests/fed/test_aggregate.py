from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from evoflow.fed import aggregate_adapters, mean, weighted_mean
from evoflow.fed.aggregate import client_weights
from evoflow.fed.comm import DecoderShape, lora_parameters, round_traffic
from evoflow.fed.settings import AggregationSettings

CONFIG = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"],
          "base_model_name_or_path": "tiny-random-llama", "task_type": "CAUSAL_LM"}  # fmt: skip


def write_adapter(folder, scale: float, **config_changes):
    folder.mkdir(parents=True)
    config = {**CONFIG, **config_changes}
    (folder / "adapter_config.json").write_text(json.dumps(config))
    r = config["r"]
    tensors = {
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.full(
            (r, 8), scale
        ),
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.full(
            (8, r), -scale
        ),
    }
    save_file(tensors, folder / "adapter_model.safetensors")
    return folder


def test_mean_and_weighted_mean_by_hand():
    a = {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([[0.0, 4.0]])}
    b = {"w": torch.tensor([3.0, 6.0]), "b": torch.tensor([[2.0, 0.0]])}
    assert torch.equal(mean([a, b])["w"], torch.tensor([2.0, 4.0]))
    assert torch.equal(mean([a, b])["b"], torch.tensor([[1.0, 2.0]]))
    weighted = weighted_mean([a, b], [1, 3])  # 0.25·a + 0.75·b
    assert torch.equal(weighted["w"], torch.tensor([2.5, 5.0]))
    assert torch.equal(weighted["b"], torch.tensor([[1.5, 1.0]]))
    with pytest.raises(ValueError, match="sum to 0"):
        weighted_mean([a, b], [0, 0])


def test_aggregate_writes_the_mean_adapter_and_comm(tmp_path):
    # Prepare
    clients = [write_adapter(tmp_path / f"c{k}", scale=k + 1.0) for k in range(3)]

    # Execute
    first = aggregate_adapters(
        clients, tmp_path / "g1", tmp_path / "comm1.json", round=1
    )
    second = aggregate_adapters(clients, tmp_path / "g2", tmp_path / "comm2.json", round=2,
                                previous_comm=tmp_path / "comm1.json")  # fmt: skip

    # Assert
    merged = load_file(tmp_path / "g1" / "adapter_model.safetensors")
    a_name = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
    assert torch.allclose(merged[a_name], torch.full((2, 8), 2.0))
    params = 2 * 8 + 8 * 2
    assert first["parameters_per_adapter"] == params
    assert first["per_client"]["up_bytes"] == {"fp32": 4 * params, "bf16": 2 * params}
    assert first["round_bytes"]["fp32"] == 2 * 3 * 4 * params
    assert second["cumulative_bytes"]["fp32"] == 2 * first["round_bytes"]["fp32"]
    assert json.loads((tmp_path / "comm2.json").read_text())["round"] == 2


def test_weighted_aggregation(tmp_path):
    clients = [write_adapter(tmp_path / f"c{k}", scale=float(k)) for k in range(2)]
    aggregate_adapters(
        clients,
        tmp_path / "g",
        tmp_path / "c.json",
        strategy="weighted",
        weights=[1, 3],
    )
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    assert torch.allclose(next(iter(merged.values())), torch.full((2, 8), 0.75))


def report_counts(folder, successes: int, explored: int):
    """The counts a client's training job writes beside its adapter."""
    (folder / "training.json").write_text(
        json.dumps(
            {"buffer_successes": successes, "buffer_explored_successes": explored}
        )
    )
    return folder


def test_weighted_ablation_weights_by_explored_successes(tmp_path):
    # Prepare: 10 demos each; the clients' own exploration found 1, 3 and 0 successes
    clients = [
        report_counts(write_adapter(tmp_path / f"c{k}", scale=scale), 10 + n, n)
        for k, (scale, n) in enumerate([(1.0, 1), (5.0, 3), (100.0, 0)])
    ]

    # Execute
    weights = client_weights(clients)
    record = aggregate_adapters(
        clients, tmp_path / "g", tmp_path / "c.json", "weighted", weights
    )

    # Assert: (1·1 + 3·5 + 0·100) / 4 = 4 for A; B holds the negated scales
    assert weights == [1.0, 3.0, 0.0]
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    a_name, b_name = sorted(merged)
    assert torch.allclose(merged[a_name], torch.full((2, 8), 4.0))
    assert torch.allclose(merged[b_name], torch.full((8, 2), -4.0))
    assert record["applied"] == "weighted" and record["fallback"] is None


def test_weighted_ablation_with_no_explored_success_takes_the_mean(tmp_path):
    # Prepare: demos succeed, exploration found nothing anywhere
    clients = [
        report_counts(write_adapter(tmp_path / f"c{k}", scale=scale), 10, 0)
        for k, scale in enumerate([1.0, 2.0, 6.0])
    ]

    # Execute
    aggregate_adapters(
        clients,
        tmp_path / "g",
        tmp_path / "c.json",
        "weighted",
        client_weights(clients),
    )

    # Assert: (1 + 2 + 6) / 3 = 3, and comm.json says why
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    assert all(
        torch.allclose(t.abs(), torch.full_like(t, 3.0)) for t in merged.values()
    )
    comm = json.loads((tmp_path / "c.json").read_text())
    assert comm["strategy"] == "weighted" and comm["applied"] == "mean"
    assert comm["weights"] == [0.0, 0.0, 0.0]
    assert "every client's weight is 0" in comm["fallback"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"r": 4}, "r is 4 but"),
        ({"target_modules": ["q_proj"]}, "target_modules"),
        ({"base_model_name_or_path": "other"}, "base_model_name_or_path"),
    ],
)
def test_a_mismatched_client_is_refused_and_the_round_goes_on(
    tmp_path, change, message
):
    good = [
        write_adapter(tmp_path / f"client={k}" / "adapter", 1.0 + k) for k in range(2)
    ]
    bad = write_adapter(tmp_path / "client=odd" / "adapter", 9.0, **change)
    record = aggregate_adapters([bad, *good], tmp_path / "g", tmp_path / "c.json")
    assert record["participants"] == ["0", "1"] and list(record["refused"]) == ["odd"]
    assert message in record["refused"]["odd"]
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    assert all(
        t.abs().max() == pytest.approx(1.5) for t in merged.values()
    )  # (1 + 2) / 2
    with pytest.raises(
        ValueError, match="no client adapter left"
    ):  # refused by the global one
        aggregate_adapters(
            [bad], tmp_path / "g2", tmp_path / "c2.json", reference=good[0]
        )
    assert not (tmp_path / "g2").exists()


def test_a_nan_client_and_a_huge_client_are_refused(tmp_path, caplog):
    # Prepare: clients 1, 2 and 3, one adapter with a NaN, one scaled by 1e6
    good = [write_adapter(tmp_path / f"client={k}" / "adapter", float(k))
            for k in (1, 2, 3)]  # fmt: skip
    nan = write_adapter(tmp_path / "client=nan" / "adapter", float("nan"))
    huge = write_adapter(tmp_path / "client=huge" / "adapter", 1e6)
    settings = AggregationSettings(max_norm_ratio=10)

    # Execute
    with caplog.at_level("ERROR", logger="evoflow.fed.admission"):
        record = aggregate_adapters([nan, *good, huge], tmp_path / "g",
                                    tmp_path / "c.json", settings=settings)  # fmt: skip
    plain = aggregate_adapters([nan, *good], tmp_path / "p", tmp_path / "p.json")

    # Assert: the mean of 1, 2 and 3 is 2; the median norm is client 2's, so
    # 1e6 is refused at 10x and the NaN is refused with or without the setting
    assert record["participants"] == ["1", "2", "3"]
    assert "non-finite" in record["refused"]["nan"]
    assert "max_norm_ratio 10" in record["refused"]["huge"]
    assert "client nan refused" in caplog.text and "client huge refused" in caplog.text
    merged = load_file(tmp_path / "g" / "adapter_model.safetensors")
    assert all(t.abs().max() == pytest.approx(2.0) for t in merged.values())
    assert plain["participants"] == ["1", "2", "3"] and list(plain["refused"]) == [
        "nan"
    ]
    with pytest.raises(ValueError, match="max_norm_ratio"):
        AggregationSettings(max_norm_ratio=1)


def test_a_trajectory_path_cannot_be_aggregated(tmp_path):
    shard = tmp_path / "explore.parquet"
    shard.write_bytes(b"PAR1")
    with pytest.raises(FileNotFoundError, match="not a PEFT adapter folder"):
        aggregate_adapters([shard], tmp_path / "g", tmp_path / "c.json")


def test_paper_communication_figures():
    llama2 = DecoderShape(
        hidden=4096, intermediate=11008, layers=32, heads=32, kv_heads=32
    )
    qwen25 = DecoderShape(
        hidden=3584, intermediate=18944, layers=28, heads=28, kv_heads=4
    )
    assert lora_parameters(llama2, 8) == 19_988_480
    traffic = round_traffic(lora_parameters(llama2, 8), clients=5)
    assert traffic["per_client"]["up_mib"]["fp32"] == 76.25
    assert traffic["per_client"]["up_mib"]["bf16"] == 38.125
    assert [
        round(lora_parameters(llama2, r) * 4 / 2**20, 1) for r in (2, 4, 8, 16)
    ] == [19.1, 38.1, 76.2, 152.5]
    assert lora_parameters(qwen25, 8) == 20_185_088

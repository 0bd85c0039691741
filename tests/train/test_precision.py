"""bf16 autocast training follows the fp32 loss curve; precision is detected."""

from __future__ import annotations

import pytest

from evoflow.precision import cpu_has_fast_bf16, resolve_dtype
from evoflow.rollout.expert import expert_demos
from evoflow.train import SFTConfig, train_sft

# Stated tolerance: per step, the bf16-autocast loss is within 1 % of fp32's.
CURVE_TOLERANCE = 0.01


@pytest.fixture(scope="module")
def chats():
    episodes = expert_demos("maze", 6, "t", seed=0)
    return [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in episodes
    ]


def test_bf16_autocast_loss_curve_matches_fp32(tmp_path, chats):
    # Prepare
    settings = dict(learning_rate=1e-2, epochs=3, batch_size=2, lora_dropout=0.0)

    # Execute
    curves = {
        precision: train_sft(
            chats,
            "tiny-random-llama",
            tmp_path / precision,
            SFTConfig(precision=precision, **settings),
            progress=False,
        )
        for precision in ("float32", "bfloat16")
    }

    # Assert: same length, each step within tolerance, and it did learn
    fp32, bf16 = curves["float32"]["loss_curve"], curves["bfloat16"]["loss_curve"]
    assert curves["bfloat16"]["precision"] == "bfloat16"
    assert len(fp32) == len(bf16) == 9
    for a, b in zip(fp32, bf16, strict=True):
        assert abs(a - b) <= CURVE_TOLERANCE * a
    assert fp32[-1] < 0.7 * fp32[0]


def test_auto_precision_follows_the_hardware(monkeypatch):
    import torch

    cpu_has_fast_bf16.cache_clear()
    monkeypatch.setenv("EVOFLOW_CPU_BF16", "1")
    assert resolve_dtype("auto", "cpu") == torch.bfloat16
    cpu_has_fast_bf16.cache_clear()
    monkeypatch.setenv("EVOFLOW_CPU_BF16", "0")
    assert resolve_dtype("auto", "cpu") == torch.float32
    assert resolve_dtype("bfloat16", "cpu") == torch.bfloat16
    cpu_has_fast_bf16.cache_clear()
    monkeypatch.setenv("EVOFLOW_CPU_BF16", "maybe")
    with pytest.raises(ValueError, match="EVOFLOW_CPU_BF16"):
        cpu_has_fast_bf16()
    cpu_has_fast_bf16.cache_clear()

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from evoflow.policy.models import resolve_model
from evoflow.rollout.expert import expert_demos
from evoflow.train import SFTConfig, train_sft
from evoflow.train.sft_data import IGNORE, encode, encode_within


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))


@pytest.fixture(scope="module")
def chats():
    episodes = expert_demos("maze", 4, "t", seed=0)
    return [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in episodes
    ]


def labelled_text(tokenizer, example):
    return tokenizer.decode([t for t in example.labels if t != IGNORE])


def test_loss_tokens_are_exactly_the_assistant_turns(tokenizer, chats):
    chat = chats[0]
    example = encode(tokenizer, chat)
    expected = "".join(
        m["content"] + "<|im_end|>" for m in chat if m["role"] == "assistant"
    )
    assert labelled_text(tokenizer, example) == expected
    rendered = tokenizer.apply_chat_template(
        [{"role": m["role"], "content": m["content"]} for m in chat], tokenize=True
    )
    assert example.input_ids == list(rendered["input_ids"])


def test_turns_flagged_without_loss_are_not_learned(tokenizer):
    chat = [
        {"role": "user", "content": "Instructions."},
        {"role": "assistant", "content": "OK", "loss": False},
        {"role": "user", "content": "Observation."},
        {"role": "assistant", "content": "Action: go", "loss": True},
    ]
    assert labelled_text(tokenizer, encode(tokenizer, chat)) == "Action: go<|im_end|>"


def test_long_episodes_keep_opening_and_latest_turns(tokenizer, chats):
    chat = chats[0]
    full = encode(tokenizer, chat)
    cut = encode_within(tokenizer, chat, max_length=len(full.input_ids) - 40)
    assert cut is not None and cut.cut_turns >= 1
    assert cut.input_ids[:20] == full.input_ids[:20]  # the system prompt stays
    kept = [m["content"] for m in chat if m["role"] == "assistant"][cut.cut_turns :]
    assert labelled_text(tokenizer, cut) == "".join(k + "<|im_end|>" for k in kept)
    assert encode_within(tokenizer, chat, max_length=50) is None


@pytest.mark.slow
def test_tiny_model_overfits_four_episodes_and_reloads(tmp_path, chats):
    # Prepare
    config = SFTConfig(
        lora_r=16,
        lora_alpha=32,
        learning_rate=1e-2,
        epochs=30,
        batch_size=4,
        lora_dropout=0.0,
    )

    # Execute
    summary = train_sft(chats, "tiny-random-llama", tmp_path / "adapter", config,
                        loss_log=tmp_path / "loss.jsonl", metadata={"buffer_sha256": "x" * 64},
                        progress=False)  # fmt: skip

    # Assert: the loss fell well below its start
    assert summary["loss_curve"][0] > 10
    assert summary["final_loss"] < 0.5 * summary["loss_curve"][0]
    assert summary["optimizer_steps"] == 30 and summary["buffer_sha256"] == "x" * 64
    assert len((tmp_path / "loss.jsonl").read_text().splitlines()) == 30
    saved = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert saved["r"] == 16 and saved["peft_type"] == "LORA"
    assert saved["base_model_name_or_path"] == "tiny-random-llama"
    assert saved["target_modules"] == [
        "down_proj",
        "gate_proj",
        "k_proj",
        "o_proj",
        "q_proj",
        "up_proj",
        "v_proj",
    ]
    # The adapter reloads with transformers + peft and changes the model's output
    from peft import PeftModel

    base = AutoModelForCausalLM.from_pretrained(resolve_model("tiny-random-llama"))
    ids = torch.tensor(
        [
            encode(
                AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama")),
                chats[0],
            ).input_ids
        ]
    )
    before = base(ids).logits
    tuned = PeftModel.from_pretrained(base, tmp_path / "adapter")
    assert not torch.allclose(before, tuned(ids).logits, atol=1e-3)


def test_training_from_an_init_adapter_starts_from_its_weights(tmp_path, chats):
    config = SFTConfig(
        lora_r=4,
        lora_alpha=8,
        learning_rate=1e-2,
        epochs=2,
        batch_size=4,
        lora_dropout=0.0,
    )
    train_sft(chats, "tiny-random-llama", tmp_path / "a", config, progress=False)
    still = SFTConfig(
        lora_r=4,
        lora_alpha=8,
        learning_rate=1e-12,
        epochs=1,
        batch_size=4,
        lora_dropout=0.0,
    )
    from_a = train_sft(
        chats,
        "tiny-random-llama",
        tmp_path / "b",
        still,
        init_adapter=tmp_path / "a",
        progress=False,
    )
    fresh = train_sft(chats, "tiny-random-llama", tmp_path / "c", still, progress=False)
    a = load_file(tmp_path / "a" / "adapter_model.safetensors")
    b = load_file(tmp_path / "b" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(
        torch.allclose(a[k], b[k], atol=1e-6) for k in a
    )
    assert from_a["loss_curve"][0] < fresh["loss_curve"][0]
    with pytest.raises(ValueError, match="adapter has r=4"):
        train_sft(
            chats,
            "tiny-random-llama",
            tmp_path / "d",
            SFTConfig(lora_r=8),
            init_adapter=tmp_path / "a",
        )


def test_config_checks():
    with pytest.raises(ValueError, match="learning_rate"):
        SFTConfig(learning_rate=0)
    with pytest.raises(ValueError, match="lora_r"):
        SFTConfig(lora_r=0)

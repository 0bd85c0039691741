"""A LoRA adapter that changes a model's replies, for tests of adapter serving."""

from __future__ import annotations

from pathlib import Path

import torch


def random_lora(model: str, folder: Path, std: float, seed: int = 0) -> str:
    """Save a rank-8, alpha-16 LoRA on all linear layers of ``model`` with B drawn
    from N(0, std²) (PEFT starts B at zero, which leaves the model unchanged)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from evoflow.policy.models import resolve_model

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(resolve_model(model))
    lora = get_peft_model(
        base, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear")
    )
    for name, weight in lora.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(weight, std=std)
    lora.save_pretrained(folder)
    return str(folder)

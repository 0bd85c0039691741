"""The KL reference of RL on a LoRA, without a second copy of the model.

``reference: start`` (the default) is the policy RL starts from, as in
AgentGym-RL where the reference is the initial model: with no starting
adapter that is the base model (the adapter switched off); with one (an SFT
warm-up) it is that adapter, frozen, loaded beside the trained one under the
name ``REFERENCE``. ``reference: base`` always switches the adapter off — the
pull is then towards the backbone, which for an SFT start means away from the
reply format it learned. The frozen weights travel in each span's state, so a
span needs only its predecessor's folder.
"""

from __future__ import annotations

from pathlib import Path

import torch

from evoflow.train.rl.data import token_logprobs

REFERENCES = ("start", "base")
REFERENCE = "reference"


def attach(model, mode: str, start_adapter: str | Path | None,
           saved: dict | None) -> str | None:  # fmt: skip
    """Load the frozen reference adapter if ``mode`` needs one; its name or None
    (None: the base model, the adapter off). ``saved``: a resumed span's copy."""
    from peft import LoraConfig, set_peft_model_state_dict

    if mode not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {mode!r}")
    if mode == "base" or (start_adapter is None and saved is None):
        return None
    if saved is not None:
        model.add_adapter(REFERENCE, LoraConfig(**saved["config"]))
        set_peft_model_state_dict(model, saved["weights"], adapter_name=REFERENCE)
    else:
        model.load_adapter(str(start_adapter), adapter_name=REFERENCE)
    model.set_adapter("default")  # the trained one stays active and trainable
    freeze(model, REFERENCE)
    return REFERENCE


def freeze(model, name: str | None) -> None:
    """Keep the reference adapter ``name`` out of training (PEFT's
    ``set_adapter`` marks the adapter it activates trainable)."""
    if name is None:
        return
    for param_name, parameter in model.named_parameters():
        if f".{name}." in param_name:
            parameter.requires_grad_(False)


def saved(model, name: str | None) -> dict | None:
    """The reference adapter's settings and weights, for a span's state."""
    from peft import get_peft_model_state_dict

    if name is None:
        return None
    config = model.peft_config[name].to_dict()
    config = {k: v for k, v in config.items() if k in _LORA_KEYS}
    weights = get_peft_model_state_dict(model, adapter_name=name)
    return {"config": config, "weights": {k: v.clone() for k, v in weights.items()}}


_LORA_KEYS = ("r", "lora_alpha", "lora_dropout", "target_modules", "task_type",
              "bias", "fan_in_fan_out", "use_rslora", "modules_to_save")  # fmt: skip


def logprobs(model, batch, dtype, name: str | None) -> torch.Tensor:
    """Log-probs of the batch's generated tokens under the reference."""
    with torch.no_grad():
        if name is None:
            with model.disable_adapter():
                return token_logprobs(model, batch, dtype)
        active = model.active_adapter
        model.set_adapter(name, inference_mode=True)
        try:
            return token_logprobs(model, batch, dtype)
        finally:
            model.set_adapter(active)
            freeze(model, name)

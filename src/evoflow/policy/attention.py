"""Attention for grouped-query models that never copies the KV cache.

transformers' ``sdpa`` attention repeats the key/value heads of a GQA model
(SmolLM2: 3 KV heads for 9 query heads) whenever an attention mask is present —
and our batches always carry one, since rows hold histories of different lengths.
That repeat copies the whole cache in every layer at every decoding step (three
quarters of a step's time on CPU). PyTorch's SDPA handles grouped heads itself
(``enable_gqa``), with or without a mask; this function asks it to.
"""

from __future__ import annotations

import torch

NAME = "evoflow_sdpa"


def gqa_sdpa(
    module,
    query,
    key,
    value,
    attention_mask,
    dropout=0.0,
    scaling=None,
    is_causal=None,
    **kwargs,
):
    """transformers attention-interface function; returns (output, None)."""
    q_length = query.shape[2]
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = bool(q_length > 1 and attention_mask is None and causal)
    if attention_mask is not None and attention_mask.shape[-1] != key.shape[-2]:
        attention_mask = attention_mask[..., : key.shape[-2]]
    groups = getattr(module, "num_key_value_groups", 1)
    output = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout if module.training else 0.0,
        scale=scaling,
        is_causal=causal,
        enable_gqa=groups > 1,
    )
    return output.transpose(1, 2).contiguous(), None


def attention_implementation() -> str:
    """Register ``gqa_sdpa`` with transformers (once) and return its name."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(NAME, gqa_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME

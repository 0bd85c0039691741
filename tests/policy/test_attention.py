"""Our grouped-query attention must compute what eager attention (and SDPA) does."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from evoflow.policy.attention import (
    _grouped_decode,
    _in_place,
    attention_implementation,
)
from evoflow.policy.models import resolve_model


def _models():
    path = resolve_model("tiny-random-llama")
    ours = AutoModelForCausalLM.from_pretrained(
        path, attn_implementation=attention_implementation()
    )
    eager = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager")
    return ours, eager


def _left_padded_batch():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 200, (3, 12), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # rows of different lengths, as in every rollout batch
    mask[2, :9] = 0
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids, mask, position_ids


def test_matches_eager_attention_on_a_padded_batch():
    ours, eager = _models()
    ids, mask, pos = _left_padded_batch()
    with torch.no_grad():
        a = ours(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        b = eager(input_ids=ids, attention_mask=mask, position_ids=pos).logits
    real = mask.bool()
    assert torch.isfinite(a).all()
    torch.testing.assert_close(a[real], b[real], atol=1e-4, rtol=1e-4)


def test_matches_eager_when_decoding_from_a_cache():
    ours, eager = _models()
    ids, mask, pos = _left_padded_batch()
    logits = []
    with torch.no_grad():
        for model in (ours, eager):
            out = model(
                input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True
            )
            step = model(
                input_ids=ids[:, -1:],
                attention_mask=torch.cat([mask, torch.ones_like(mask[:, :1])], -1),
                position_ids=pos[:, -1:] + 1,
                past_key_values=out.past_key_values,
                use_cache=True,
                logits_to_keep=1,
            )
            logits.append(step.logits)
    torch.testing.assert_close(logits[0], logits[1], atol=1e-4, rtol=1e-4)


def test_gradients_match_eager():
    ours, eager = _models()
    ids, mask, pos = _left_padded_batch()
    grads = []
    for model in (ours, eager):
        logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        logits[mask.bool()].logsumexp(-1).sum().backward()
        grads.append(model.model.layers[0].self_attn.q_proj.weight.grad)
    assert torch.isfinite(grads[0]).all()
    torch.testing.assert_close(grads[0], grads[1], atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize(
    ("dtype", "tolerance"), [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)]
)
@pytest.mark.parametrize("boolean_mask", [True, False])
def test_grouped_decode_equals_sdpa(dtype, tolerance, boolean_mask):
    # Prepare: 9 query heads over 3 KV heads, rows with different padding
    torch.manual_seed(0)
    q = torch.randn(4, 9, 1, 64, dtype=dtype)
    k = torch.randn(4, 3, 37, 64, dtype=dtype)
    v = torch.randn(4, 3, 37, 64, dtype=dtype)
    attend = torch.ones(4, 1, 1, 37, dtype=torch.bool)
    attend[1, ..., :10] = False
    attend[3, ..., :30] = False
    mask = (
        attend if boolean_mask else torch.zeros(attend.shape).masked_fill(~attend, -1e9)
    )

    # Execute
    ours = _grouped_decode(q, k, v, mask, None)
    reference = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float(), v.float(), attn_mask=attend, enable_gqa=True
    ).transpose(1, 2)

    # Assert
    assert ours.shape == (4, 1, 9, 64) and ours.dtype == dtype
    assert (ours.float() - reference).abs().max() < tolerance


@pytest.mark.parametrize("boolean_mask", [True, False])
def test_grouped_decode_reads_a_sliced_cache_in_place(boolean_mask):
    # Prepare: a cache buffer of 50 columns of which 37 are filled, the rest
    # holding large values that must get no attention weight
    torch.manual_seed(0)
    q = torch.randn(4, 9, 1, 64)
    k_buffer, v_buffer = torch.randn(4, 3, 50, 64), torch.randn(4, 3, 50, 64)
    k_buffer[:, :, 37:] = 1e4
    v_buffer[:, :, 37:] = 1e4
    k, v = k_buffer[:, :, :37], v_buffer[:, :, :37]
    attend = torch.ones(4, 1, 1, 37, dtype=torch.bool)
    attend[2, ..., :20] = False
    mask = (
        attend if boolean_mask else torch.zeros(attend.shape).masked_fill(~attend, -1e9)
    )

    # Execute
    ours = _grouped_decode(q, k, v, mask, None)
    packed = _grouped_decode(q, k.contiguous(), v.contiguous(), mask, None)
    widened = _in_place(k)

    # Assert: the same attention as on packed copies, from the buffer itself
    torch.testing.assert_close(ours, packed, atol=1e-5, rtol=1e-5)
    assert widened.shape == (4, 3, 50, 64)
    assert widened.data_ptr() == k_buffer.data_ptr()
    assert _in_place(k_buffer[:, :, 5:37]).shape[2] == 32  # not a leading slice
    assert _in_place(k.transpose(1, 2)).shape == (4, 37, 3, 64)  # other layouts kept


def test_each_steps_mask_is_honoured_though_the_bias_is_built_once_per_step():
    # Prepare: two decoding steps of the same shape whose masks differ, as when
    # a row finishes between steps; the layers of one step share a mask object
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(2, 9, 1, 64),
        torch.randn(2, 3, 20, 64),
        torch.randn(2, 3, 20, 64),
    )
    first = torch.ones(2, 1, 1, 20, dtype=torch.bool)
    second = first.clone()
    second[0, ..., :15] = False

    # Execute: two layers of the first step, then a layer of the second
    out = [_grouped_decode(q, k, v, m, None) for m in (first, first, second)]

    # Assert: each equals attention under its own mask
    for result, attend in zip(out, (first, first, second), strict=True):
        reference = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attend, enable_gqa=True
        ).transpose(1, 2)
        torch.testing.assert_close(result, reference, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(out[2][0], out[0][0], atol=1e-3)


def _filled_per_layer(query, key, value, mask):
    """The grouped decode as it was before the per-step bias: the scores filled
    with -inf (or the additive mask added) in every layer. A regression
    reference: the bias must change no bit of the output."""
    b, heads, _, d = query.shape
    grouped = query.reshape(b, key.shape[1], heads // key.shape[1], d)
    scores = torch.matmul(grouped, key.transpose(-1, -2)).float() * d**-0.5
    if mask is not None and mask.dtype == torch.bool:
        scores.masked_fill_(~mask, float("-inf"))
    elif mask is not None:
        scores += mask.float()
    weights = torch.softmax(scores, dim=-1).to(value.dtype)
    return torch.matmul(weights, value).reshape(b, 1, heads, d)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kind", ["boolean", "additive", "none"])
def test_the_per_step_bias_changes_no_bit_of_the_output(dtype, kind):
    # Prepare: rows with different padding, three kinds of mask
    torch.manual_seed(1)
    q = torch.randn(5, 9, 1, 64, dtype=dtype)
    k, v = (
        torch.randn(5, 3, 41, 64, dtype=dtype),
        torch.randn(5, 3, 41, 64, dtype=dtype),
    )
    attend = torch.rand(5, 1, 1, 41) > 0.3
    attend[..., -1] = True
    mask = {
        "boolean": attend,
        "additive": torch.randn(5, 1, 1, 41).masked_fill(~attend, -1e9),
        "none": None,
    }[kind]

    # Execute (twice: the second call is served the cached bias)
    first = _grouped_decode(q, k, v, mask, None)
    second = _grouped_decode(q, k, v, mask, None)

    # Assert
    expected = _filled_per_layer(q, k, v, mask)
    assert torch.equal(first, expected) and torch.equal(second, expected)

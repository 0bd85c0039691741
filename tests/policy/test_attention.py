"""The grouped decode path computes what PyTorch's SDPA computes."""

from __future__ import annotations

import pytest
import torch

from evoflow.policy.attention import _grouped_decode


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

"""LoRA input dropout drawn as gaps: checked against the Bernoulli mask it
stands for (hand-worked probabilities, not the code's own output)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from evoflow.train.dropout import (
    BernoulliGaps,
    dropped_positions,
    gap_dropout,
    use_gap_dropout,
)

DRAWS = 20_000


def masks(n: int, p: float, draws: int | None = None) -> torch.Tensor:
    """``DRAWS`` masks over ``n`` elements, 1 where dropped."""
    torch.manual_seed(0)
    out = torch.zeros(DRAWS, n)
    for k in range(DRAWS):
        out[k, dropped_positions(n, p, draws=draws)] = 1.0
    return out


def within(observed: float, expected: float, sigma: float) -> bool:
    return abs(observed - expected) <= 5 * sigma


@pytest.mark.parametrize("draws", [None, 1])  # 1: gaps drawn one at a time
def test_every_position_drops_with_probability_p_independently(draws):
    # Bernoulli(0.3) over 7 elements: each element drops with p = 0.3, any two
    # together with p^2 = 0.09, and the count is Binomial(7, 0.3)
    n, p = 7, 0.3
    dropped = masks(n, p, draws)
    sigma = math.sqrt(p * (1 - p) / DRAWS)
    for rate in dropped.mean(0).tolist():  # the first and the last element too
        assert within(rate, p, sigma), dropped.mean(0)
    pair = math.sqrt(p * p * (1 - p * p) / DRAWS)
    for i, j in [(0, 1), (3, 4), (5, 6), (0, 6)]:
        assert within((dropped[:, i] * dropped[:, j]).mean().item(), p * p, pair)
    counts = dropped.sum(1).long().bincount(minlength=n + 1).float() / DRAWS
    for k in range(n + 1):
        pmf = math.comb(n, k) * p**k * (1 - p) ** (n - k)
        assert within(counts[k].item(), pmf, math.sqrt(pmf * (1 - pmf) / DRAWS))


def test_a_large_tensor_drops_its_share_and_scales_what_it_keeps():
    torch.manual_seed(1)
    x = torch.rand(1500, 2000) + 0.5
    p = 0.05
    y = gap_dropout(x, p)
    n = x.numel()
    zero = y == 0
    assert within(zero.float().mean().item(), p, math.sqrt(p * (1 - p) / n))
    torch.testing.assert_close(y[~zero], x[~zero] / (1 - p), rtol=1e-6, atol=0)
    tail = zero.view(-1)[-n // 10 :]  # the last tenth is reached like the rest
    assert within(tail.float().mean().item(), p, math.sqrt(p * (1 - p) / (n // 10)))


def test_the_gradient_is_the_mask_and_its_scale():
    torch.manual_seed(2)
    x = (torch.rand(300, 40) + 0.5).requires_grad_()
    y = gap_dropout(x, 0.2)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y / x).detach())
    kept = x.grad != 0
    torch.testing.assert_close(x.grad[kept], torch.full_like(x.grad[kept], 1.25))


def test_a_seed_repeats_the_mask_and_another_seed_does_not():
    x = torch.ones(200, 300)
    torch.manual_seed(3)
    first = gap_dropout(x, 0.1)
    torch.manual_seed(3)
    again = gap_dropout(x, 0.1)
    torch.manual_seed(4)
    other = gap_dropout(x, 0.1)
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_the_module_drops_only_in_training_and_refuses_bad_rates():
    x = torch.ones(50, 60)
    drop = BernoulliGaps(0.5)
    assert isinstance(drop, nn.Dropout)  # seen by code asking whether a model drops
    assert (drop(x) == 0).any()
    drop.eval()
    assert torch.equal(drop(x), x)
    assert torch.equal(BernoulliGaps(0.0)(x), x)
    for rate in (-0.1, 1.0):
        with pytest.raises(ValueError, match="dropout probability"):
            BernoulliGaps(rate)


def test_lora_layers_get_gap_dropout_of_their_rate():
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from evoflow.policy.models import resolve_model

    base = AutoModelForCausalLM.from_pretrained(resolve_model("tiny-random-llama"))
    model = get_peft_model(base, LoraConfig(r=4, lora_dropout=0.05,
                                            target_modules="all-linear"))  # fmt: skip
    replaced = use_gap_dropout(model)
    drops = [d for m in model.modules() if isinstance(getattr(m, "lora_dropout", None),
             nn.ModuleDict) for d in m.lora_dropout.values()]  # fmt: skip
    assert replaced == len(drops) > 0
    assert all(type(d) is BernoulliGaps and d.p == 0.05 for d in drops)

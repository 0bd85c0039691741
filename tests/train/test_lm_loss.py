"""The chunked LM-head loss against plain cross-entropy, and the batch loss
against the model's own ``labels=`` loss."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from evoflow.policy.models import resolve_model
from evoflow.train.lm_loss import linear_cross_entropy
from evoflow.train.sft_data import IGNORE, Example
from evoflow.train.sft_trainer import _batch_loss


def test_matches_full_logits_cross_entropy_and_its_gradient():
    # Prepare: 7 rows, vocabulary 11, chunks of 3 (so the last chunk is short)
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(7, 5, generator=gen, requires_grad=True)
    weight = torch.randn(11, 5, generator=gen)
    targets = torch.tensor([0, 3, 10, 4, 4, 7, 1])
    reference_hidden = hidden.detach().clone().requires_grad_(True)

    # Execute
    ours = linear_cross_entropy(hidden, weight, targets, chunk=3)
    (2.0 * ours).backward()
    reference = torch.nn.functional.cross_entropy(
        reference_hidden @ weight.t(), targets, reduction="sum"
    )
    (2.0 * reference).backward()

    # Assert
    assert ours.item() == pytest.approx(reference.item(), rel=1e-5)
    torch.testing.assert_close(hidden.grad, reference_hidden.grad, rtol=1e-5, atol=1e-6)


def test_hand_worked_value():
    # Two equal logits per row: each row's loss is log 2, whatever the target.
    hidden = torch.tensor([[1.0], [1.0]])
    weight = torch.tensor([[2.0], [2.0]])
    loss = linear_cross_entropy(hidden, weight, torch.tensor([0, 1]), chunk=1)
    assert loss.item() == pytest.approx(2 * torch.log(torch.tensor(2.0)).item())


def test_refuses_a_trainable_head():
    weight = torch.zeros(3, 2, requires_grad=True)
    with pytest.raises(ValueError, match="trainable"):
        linear_cross_entropy(torch.zeros(1, 2), weight, torch.tensor([0]))


def test_batch_loss_over_token_count_is_the_models_own_labels_loss():
    # Prepare: two right-padded rows of different lengths, a few labelled tokens
    from peft import LoraConfig, get_peft_model

    base = AutoModelForCausalLM.from_pretrained(resolve_model("tiny-random-llama"))
    model = get_peft_model(
        base, LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    model.eval()
    rows = [
        Example([5, 9, 14, 3, 8, 2, 7], [IGNORE, IGNORE, 14, 3, IGNORE, 2, 7]),
        Example([6, 11, 4, 2], [IGNORE, IGNORE, 4, 2]),
    ]
    count = sum(e.trained_tokens for e in rows)

    # Execute
    with torch.no_grad():
        ours = _batch_loss(model, rows, 0, torch.device("cpu")) / count
        # the model's loss, one row at a time (no padding), token-weighted
        total = sum(
            model(
                input_ids=torch.tensor([e.input_ids]), labels=torch.tensor([e.labels])
            ).loss
            * e.trained_tokens
            for e in rows
        )

    # Assert
    assert ours.item() == pytest.approx((total / count).item(), rel=1e-5)

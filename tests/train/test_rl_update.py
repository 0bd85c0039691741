"""One RL update moves the policy the way the advantages say."""

from __future__ import annotations

import math

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.policy.models import resolve_model
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.train.rl import reference as rl_reference
from evoflow.train.rl.advantages import low_var_kl, masked_mean
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.data import (
    MIN_SHARED,
    RLBatch,
    TurnSequence,
    collate,
    common_prefix,
    token_logprobs,
    token_stats,
    turn_sequences,
)
from evoflow.train.rl.update import (
    ValueHead,
    micro_batches,
    recompute_old_logprobs,
    token_advantages,
    update,
    values_of,
)


@pytest.fixture(scope="module")
def sampled():
    policy = HFPolicy("tiny-random-llama", max_context=1024, dtype="float32")
    spec = RolloutSpec(experiment="t", method="rl", split="train", source="explore",
                       horizon=1, samples=1, seed=11,
                       sampling=SamplingParams(temperature=1.0, max_new_tokens=6))  # fmt: skip
    episodes = rollout(
        policy, lambda: make_env("maze"), ["0", "1"], spec, progress=False
    )
    return collate(turn_sequences(policy.tokenizer, episodes), pad_id=0)


def lora_model():
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(
        resolve_model("tiny-random-llama"), torch_dtype=torch.float32
    )
    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", lora_dropout=0.0)
    return get_peft_model(base, lora)


REWARDS, GROUPS = (
    torch.tensor([1.0, -1.0]),
    torch.tensor([0, 1]),
)  # two tasks, one sample each


def test_advantages_broadcast_to_each_trajectorys_generated_tokens(sampled):
    # GRPO: a sample alone in its group keeps its reward as advantage
    advantages, returns = token_advantages(sampled, REWARDS, GROUPS, "grpo")
    assert returns is None
    for row in range(2):
        values = advantages[row][sampled.loss_mask[row].bool()]
        expected = float(REWARDS[sampled.trajectory[row]])
        assert values.tolist() == pytest.approx([expected] * len(values))
    assert (advantages[sampled.loss_mask == 0] == 0).all()


def two_replies(model, tokenizer, words=("left", "right")):
    """One prompt answered two ways ("left" / "right"), with the model's own
    log-probs as the sampling ones (ratio 1 before the update)."""
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Which way?"}],
                                           add_generation_prompt=True)  # fmt: skip
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    sequences = []
    for k, word in enumerate(words):
        reply = tokenizer(word, add_special_tokens=False)["input_ids"]
        sequences.append(
            TurnSequence(
                prompt + reply,
                [False] * len(prompt) + [True] * len(reply),
                [0.0] * (len(prompt) + len(reply)),
                k,
            )  # fmt: skip
        )
    batch = collate(sequences, pad_id=0)
    with torch.no_grad():
        batch.old_logprobs = token_logprobs(model, batch) * batch.loss_mask
    return batch


@pytest.mark.parametrize(
    "estimator", ["grpo", "rloo", "reinforce_pp", "task_relative", "ppo"]
)
def test_an_update_raises_the_rewarded_reply_and_lowers_the_other(estimator):
    # Prepare: "left" rewarded, "right" not, as two samples of one task
    model = lora_model()
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    batch = two_replies(model, tokenizer)
    config = RLConfig(estimator=estimator, samples_per_task=2, learning_rate=1e-2,
                      kl_coef=1e-3, entropy_coef=0.0, micro_batch=1)  # fmt: skip
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=config.learning_rate)  # fmt: skip
    critic = values = None
    if estimator == "ppo":  # its critic: a value head trained beside the policy
        critic = ValueHead(model.config.hidden_size)
        optimizer.add_param_group({"params": list(critic.parameters())})
        values = values_of(model, batch, torch.float32, critic)
    advantages, returns = token_advantages(batch, torch.tensor([1.0, 0.0]),
                                           torch.tensor([0, 0]), estimator, values)  # fmt: skip

    def reply_logp() -> list[float]:
        with torch.no_grad():
            logp = token_logprobs(model, batch)
        return [float((logp[r] * batch.loss_mask[r]).sum()) for r in range(2)]

    # Execute
    before = reply_logp()
    stats = update(model, optimizer, batch, advantages, config, critic=critic,
                   returns=returns, old_values=values)  # fmt: skip
    after = reply_logp()

    # Assert
    assert after[0] > before[0] and after[1] < before[1]
    assert stats.tokens == int(batch.loss_mask.sum()) and stats.clip_fraction == 0.0


def test_ppo_whitens_its_gae_advantages_over_the_batch():
    # two one-turn trajectories of two generated tokens each, values 0, γ = λ = 1:
    # GAE gives 1, 1 (reward 1) and 0, 0 (reward 0); returns are the same.
    # Whitened: mean 0.5, unbiased variance (4 · 0.25) / 3 = 1/3 -> ±0.5 · √3
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]])
    batch = RLBatch(torch.zeros(2, 4, dtype=torch.long), torch.ones(2, 4, dtype=torch.long),
                    mask, torch.zeros(2, 4), torch.tensor([0, 1]))  # fmt: skip
    advantages, returns = token_advantages(batch, torch.tensor([1.0, 0.0]), torch.tensor([0, 1]),
                                           "ppo", values=torch.zeros(2, 4))  # fmt: skip
    high = 0.5 * math.sqrt(3) / math.sqrt(1 + 3e-8)
    assert advantages.flatten().tolist() == pytest.approx(
        [0, high, high, 0, 0, -high, -high, 0], abs=1e-5
    )
    assert returns.flatten().tolist() == pytest.approx([0, 1, 1, 0, 0, 0, 0, 0])


def test_the_ratio_starts_from_the_training_models_own_logprobs():
    # The old log-probs stored with a batch (the rollout backend's) are
    # replaced by the training model's before the first step: stored ones that
    # are 30 nats off change nothing, and nothing is clipped on the first pass.
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    config = RLConfig(estimator="grpo", samples_per_task=2, learning_rate=1e-2,
                      kl_coef=0.0, entropy_coef=0.0, micro_batch=2, update_epochs=1)  # fmt: skip
    trained = []
    for offset in (0.0, -30.0):
        model = lora_model()
        batch = two_replies(model, tokenizer)
        batch.old_logprobs = (batch.old_logprobs + offset) * batch.loss_mask
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                      lr=config.learning_rate)  # fmt: skip
        advantages, _ = token_advantages(batch, torch.tensor([1.0, 0.0]),
                                         torch.tensor([0, 0]), "grpo")  # fmt: skip
        stats = update(model, optimizer, batch, advantages, config)
        assert stats.clip_fraction == 0.0
        trained.append(
            [p.detach().clone() for p in model.parameters() if p.requires_grad]
        )
    assert all(torch.equal(a, b) for a, b in zip(*trained, strict=True))


def _off_reference(model) -> None:
    """Move the policy away from its reference (the adapter-free base): the
    LoRA's B matrices start at zero, so give them small random values."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)


def _regularised(kl_coef: float, entropy_coef: float):
    """The two-reply batch updated with zero advantages, so only the KL or
    the entropy term moves the policy: (before, after) of that term."""
    model = lora_model()
    _off_reference(model)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    batch = two_replies(model, tokenizer)
    config = RLConfig(estimator="grpo", samples_per_task=2, learning_rate=1e-3,
                      kl_coef=kl_coef, entropy_coef=entropy_coef, micro_batch=2,
                      update_epochs=3)  # fmt: skip
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=config.learning_rate)  # fmt: skip

    def measured() -> float:
        with torch.no_grad():
            stats = token_stats(model, batch, entropy=True)
            if kl_coef == 0:
                return float(masked_mean(stats.entropy, batch.loss_mask))
            ref = rl_reference.logprobs(model, batch, torch.float32, None)
            return float(masked_mean(low_var_kl(stats.logprobs, ref), batch.loss_mask))

    before = measured()
    update(model, optimizer, batch, torch.zeros_like(batch.loss_mask), config)
    return before, measured()


def test_the_kl_term_pulls_the_policy_towards_its_reference():
    before, after = _regularised(kl_coef=1.0, entropy_coef=0.0)
    assert before > 1e-3 and after < 0.9 * before


def test_the_entropy_bonus_raises_the_entropy():
    before, after = _regularised(kl_coef=0.0, entropy_coef=1.0)
    assert after > before + 1e-3


@pytest.mark.parametrize("micro_batch", [1, 2])
def test_one_pass_is_a_plain_policy_gradient_step(micro_batch):
    # At ratio 1 the clipped surrogate's gradient is A·∇log π: one pass, in
    # micro-batches of one row or of both (which read their shared prompt
    # once), must equal a hand-written SGD step, row by row, on
    # −(Σ A·log π over all generated tokens) / their count, clipped to norm 1 —
    # the old log-probs detached (or there is no gradient), rows weighted by
    # their tokens (the replies differ in length), the gradient's size kept.
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    words = ("left", "turn right at the second door")
    assert len(tokenizer(words[1], add_special_tokens=False)["input_ids"]) > 2
    config = RLConfig(estimator="grpo", samples_per_task=2, learning_rate=1e-2,
                      kl_coef=0.0, entropy_coef=0.0, micro_batch=micro_batch)  # fmt: skip
    stepped = []
    for by_hand in (False, True):
        model = lora_model()
        batch = two_replies(model, tokenizer, words)
        assert common_prefix(batch.input_ids) >= MIN_SHARED
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.SGD(params, lr=config.learning_rate)
        advantages, _ = token_advantages(batch, torch.tensor([1.0, 0.0]),
                                         torch.tensor([0, 0]), "grpo")  # fmt: skip
        if by_hand:
            rows = torch.arange(2)[:, None]  # one row at a time: no sharing
            logp = torch.cat([token_logprobs(model, _rows(batch, r)) for r in rows])
            mask = batch.loss_mask
            (-(advantages * logp * mask).sum() / mask.sum()).backward()
            torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
        else:
            update(model, optimizer, batch, advantages, config)
        stepped.append([p.detach().clone() for p in params])
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(*stepped, strict=True))


def test_recomputed_old_logprobs_stay_with_their_rows():
    # micro-batches run in the order rows open (so a task's samples go
    # together); the log-probs must come back to the rows they belong to,
    # in either order of the two replies
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    model = lora_model()
    orders = []
    for words in (("left", "turn right"), ("turn right", "left")):
        batch = two_replies(model, tokenizer, words)
        chunks = micro_batches(batch, rows=2)
        orders.append(chunks[0].tolist())
        got = recompute_old_logprobs(model, batch, torch.float32, chunks)
        for r in range(2):
            alone = token_logprobs(model, _rows(batch, torch.tensor([r])))
            torch.testing.assert_close(got.old_logprobs[r], alone[0])
    assert sorted(orders) == [[0, 1], [1, 0]]  # one order was reversed


def test_micro_batches_hold_rows_that_open_alike_within_their_token_budget():
    # rows 0 and 2 open with the same 20 tokens (+5 and +8 of their own), row 1
    # is 30 tokens of another opening and row 3 is as long alone: by hand,
    # 0 and 2 read 20 + 5 + 8 = 33 tokens together; with row 1 they share
    # nothing and would read 25 + 30 + 28 = 83
    opening = list(range(100, 120))
    rows = [opening + [1] * 5, list(range(200, 230)), opening + [2] * 8,
            list(range(300, 330))]  # fmt: skip
    batch = collate([TurnSequence(r, [True] * len(r), [0.0] * len(r), i)
                     for i, r in enumerate(rows)], pad_id=0)  # fmt: skip
    chunks = [c.tolist() for c in micro_batches(batch, rows=8, tokens=40)]
    assert chunks == [[0, 2], [1], [3]]
    assert [c.tolist() for c in micro_batches(batch, rows=8, tokens=83)] == [
        [0, 2, 1], [3]]  # fmt: skip
    assert [c.tolist() for c in micro_batches(batch, rows=2)] == [[0, 2], [1, 3]]
    assert [c.tolist() for c in micro_batches(batch, rows=1)] == [[0], [2], [1], [3]]


def test_a_micro_batch_reads_no_column_of_padding_alone():
    # two replies of different lengths, one per micro-batch: each forward is
    # as wide as its own row, not the batch's longest
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    model = lora_model()
    batch = two_replies(model, tokenizer, ("left", "turn right at the second door"))
    lengths = batch.attention_mask.sum(dim=1).tolist()
    assert lengths[0] != lengths[1]
    widths = []
    model.get_input_embeddings().register_forward_hook(
        lambda _m, args, _o: widths.append(args[0].shape[1])
    )
    config = RLConfig(estimator="grpo", samples_per_task=2, kl_coef=0.0,
                      entropy_coef=0.0, micro_batch=1)  # fmt: skip
    optimizer = torch.optim.SGD(
        [p for p in model.parameters() if p.requires_grad], lr=0.1
    )
    advantages, _ = token_advantages(batch, torch.tensor([1.0, 0.0]),
                                     torch.tensor([0, 0]), "grpo")  # fmt: skip
    update(model, optimizer, batch, advantages, config)
    assert sorted(widths) == sorted(lengths)


def _rows(batch, rows):
    return RLBatch(batch.input_ids[rows], batch.attention_mask[rows],
                   batch.loss_mask[rows], batch.old_logprobs[rows],
                   batch.trajectory[rows])  # fmt: skip


@pytest.mark.parametrize(("epochs", "dropout", "forwards"),
                         [(1, 0.0, 2), (2, 0.0, 6), (1, 0.1, 4)])  # fmt: skip
def test_old_logprobs_cost_a_forward_only_when_the_pass_cannot_give_them(
    epochs, dropout, forwards
):
    # two rows, one per micro-batch, no KL: one pass with nothing dropped reads
    # its old log-probs off its own forwards; more passes, or dropout, recompute
    # them first (one forward per row), then run a forward per row per pass
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(
        resolve_model("tiny-random-llama"), torch_dtype=torch.float32
    )
    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
                      lora_dropout=dropout)  # fmt: skip
    model = get_peft_model(base, lora)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    batch = two_replies(model, tokenizer)
    config = RLConfig(estimator="grpo", samples_per_task=2, kl_coef=0.0,
                      entropy_coef=0.0, micro_batch=1, update_epochs=epochs)  # fmt: skip
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    calls = []
    model.get_input_embeddings().register_forward_hook(lambda *_: calls.append(1))
    advantages, _ = token_advantages(batch, torch.tensor([1.0, 0.0]),
                                     torch.tensor([0, 0]), "grpo")  # fmt: skip
    update(model, optimizer, batch, advantages, config)
    assert len(calls) == forwards

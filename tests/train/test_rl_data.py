"""RL sequences hold the sampled tokens, and a forward pass over the padded batch
gives back the log-probs stored at sampling time."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from transformers import AutoModelForCausalLM

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams, prompt_ids
from evoflow.policy.hf import HFPolicy
from evoflow.policy.models import resolve_model
from evoflow.rollout.engine import RolloutSpec, rollout
from evoflow.store.schema import Message
from evoflow.train.rl.data import (
    RLBatch,
    TurnSequence,
    collate,
    common_prefix,
    token_logprobs,
    token_stats,
    turn_sequences,
)
from tests.helpers import make_episode


@pytest.fixture(scope="module")
def fp32() -> HFPolicy:
    return HFPolicy("tiny-random-llama", max_context=1024, dtype="float32")


@pytest.fixture(scope="module")
def episodes(fp32):
    spec = RolloutSpec(experiment="t", method="m", split="train", source="explore",
                       horizon=3, samples=2, seed=5,
                       sampling=SamplingParams(temperature=1.0, max_new_tokens=10))  # fmt: skip
    return rollout(fp32, lambda: make_env("maze"), ["0", "1"], spec, progress=False)


def test_a_padded_forward_pass_reproduces_the_sampling_logprobs(fp32, episodes):
    sequences = turn_sequences(fp32.tokenizer, episodes)
    turns = sum(m.role == "assistant" for e in episodes for m in e.messages)
    assert len(episodes) <= len(sequences) <= turns
    assert {s.trajectory for s in sequences} == set(range(len(episodes)))

    batch = collate(sequences, pad_id=0)
    with torch.no_grad():
        recomputed = token_logprobs(fp32.base, batch)

    mask = batch.loss_mask.bool()
    sampled = sum(
        len(m.token_ids) for e in episodes for m in e.messages if m.role == "assistant"
    )
    assert int(mask.sum()) == sampled
    assert torch.allclose(recomputed[mask], batch.old_logprobs[mask], atol=1e-4)


def test_a_turn_without_sampled_tokens_is_named(fp32, episodes):
    episode = episodes[0]
    turn = next(i for i, m in enumerate(episode.messages) if m.role == "assistant")
    messages = list(episode.messages)
    messages[turn] = dataclasses.replace(messages[turn], token_ids=None)
    broken = dataclasses.replace(episode, messages=messages)
    with pytest.raises(
        ValueError, match=f"episode {episode.episode_id}: assistant turn"
    ):
        turn_sequences(fp32.tokenizer, [broken])


def test_turns_rendered_as_a_prefix_share_one_sequence(fp32):
    # Prepare: two replies whose sampled ids are their text's own tokens + <|im_end|>
    tok = fp32.tokenizer
    end = tok.convert_tokens_to_ids("<|im_end|>")
    replies = ["Thought: down.\nAction: move down", "Thought: left.\nAction: move left"]
    ids = [tok(r, add_special_tokens=False)["input_ids"] + [end] for r in replies]
    messages = [Message("system", "Maze."), Message("user", "Start."),
                Message("assistant", replies[0], True, ids[0], [-0.5] * len(ids[0])),
                Message("user", "You moved down.", False),
                Message("assistant", replies[1], True, ids[1], [-0.25] * len(ids[1])),
                Message("user", "You moved left.", False)]  # fmt: skip
    episode = make_episode(messages=messages)

    # Execute
    (sequence,) = turn_sequences(tok, [episode])

    # Assert: the sampled tokens train, the observation between them is context
    chat = [{"role": m.role, "content": m.content} for m in messages[:4]]
    assert sequence.input_ids == prompt_ids(tok, chat) + ids[1]
    generated = [
        t for t, on in zip(sequence.input_ids, sequence.generated, strict=True) if on
    ]
    assert generated == ids[0] + ids[1]
    assert sorted(set(sequence.old_logprobs)) == [-0.5, -0.25, 0.0]


def test_logprobs_are_those_of_each_rows_sampling_temperature():
    # Checked against a plain teacher-forced forward: log_softmax(logits / T).
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(resolve_model("tiny-random-llama"),
                                                 torch_dtype=torch.float32)  # fmt: skip
    ids = torch.randint(3, 200, (2, 7))
    mask = torch.tensor(
        [[0, 0, 0, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1, 1]], dtype=torch.float32
    )
    temps = torch.tensor([0.5, 2.0])
    batch = RLBatch(ids, torch.ones_like(ids), mask, torch.zeros(2, 7), torch.tensor([0, 1]),
                    temps)  # fmt: skip
    stats = token_stats(model, batch, entropy=True)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, :-1] / temps[:, None, None]
    logp = torch.log_softmax(logits, -1)
    expected = torch.zeros(2, 7)
    expected[:, 1:] = logp.gather(-1, ids[:, 1:, None])[..., 0] * mask[:, 1:]
    torch.testing.assert_close(stats.logprobs.detach(), expected, atol=1e-5, rtol=1e-4)
    entropy = torch.zeros(2, 7)
    entropy[:, 1:] = -(logp.exp() * logp).sum(-1) * mask[:, 1:]
    torch.testing.assert_close(stats.entropy.detach(), entropy, atol=1e-5, rtol=1e-4)
    plain = token_stats(model, RLBatch(ids, torch.ones_like(ids), mask, torch.zeros(2, 7),
                                       torch.tensor([0, 1])))  # fmt: skip
    assert not torch.allclose(
        plain.logprobs, stats.logprobs, atol=1e-3
    )  # T matters here


class NextToken(torch.nn.Module):
    """A synthetic causal LM with a known next-token law: after token i it
    puts logit 20 on (i + 1) mod V and 0 elsewhere. Its hidden state at a
    position is the one-hot of that position's token (no context), so what a
    position predicts depends on its own token alone."""

    V = 8

    def __init__(self) -> None:
        super().__init__()
        head = torch.nn.Linear(self.V, self.V, bias=False)
        with torch.no_grad():
            head.weight.copy_(20 * torch.eye(self.V).roll(1, dims=0))
        self.head = head
        self.config = type("Config", (), {"hidden_size": self.V})()

    def get_decoder(self):
        def decode(input_ids):
            hidden = torch.nn.functional.one_hot(input_ids, self.V).float()
            return type("Out", (), {"last_hidden_state": hidden})()

        return decode

    def get_output_embeddings(self):
        return self.head


def test_logprobs_are_read_one_position_back_on_a_model_with_a_known_law():
    # 0 1 2 3 4 follows the law: every generated token has log-prob
    # log(e^20 / (e^20 + 7)); read one position off, each would get -20 - that
    ids = torch.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 0, 1]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 1, 1]], dtype=torch.float32)
    batch = RLBatch(
        ids, torch.ones_like(ids), mask, torch.zeros(2, 5), torch.tensor([0, 1])
    )
    on_law = 20 - math.log(math.exp(20) + 7)
    expected = mask * on_law
    torch.testing.assert_close(token_logprobs(NextToken(), batch), expected)
    # at T = 2 the logits halve: log(e^10 / (e^10 + 7)), checked by hand
    warm = dataclasses.replace(batch, temperature=torch.tensor([2.0, 2.0]))
    at_two = 10 - math.log(math.exp(10) + 7)
    torch.testing.assert_close(token_logprobs(NextToken(), warm), mask * at_two)


def test_the_value_at_a_token_reads_the_state_before_it():
    # V(p) is the value of the state that chose token p: the hidden state at
    # p - 1, the one-hot of token p - 1 here, so V(p) = w[token_{p-1}] + b
    from evoflow.train.rl.update import ValueHead, values_of

    critic = ValueHead(NextToken.V)
    with torch.no_grad():
        critic.linear.weight.copy_(torch.arange(NextToken.V, dtype=torch.float32)[None])
        critic.linear.bias.fill_(0.5)
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    batch = RLBatch(ids, torch.ones_like(ids), torch.ones(1, 5), torch.zeros(1, 5),
                    torch.tensor([0]))  # fmt: skip
    values = values_of(NextToken(), batch, torch.float32, critic)
    assert values[0].tolist() == pytest.approx([0.0, 3.5, 1.5, 4.5, 1.5])


def test_rows_that_open_alike_read_their_opening_once_and_get_what_each_row_alone_gets():
    # three replies after one 40-token opening, of different lengths (padded):
    # the opening runs through the decoder once, each row's rest attends to
    # its cache; log-probs, entropies and the LoRA gradient must be those of
    # each row's own forward, alone and unpadded
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(
        resolve_model("tiny-random-llama"), dtype=torch.float32
    )
    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear")
    model = get_peft_model(base, lora)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # a LoRA that changes the forward
            torch.nn.init.normal_(p, std=0.02)
    opening = torch.randint(5, 500, (40,))
    rows = [torch.cat([opening, torch.randint(5, 500, (n,))]) for n in (12, 30, 7)]
    batch = collate([TurnSequence(r.tolist(), [False] * 40 + [True] * (len(r) - 40),
                                  [0.0] * len(r), i)
                     for i, r in enumerate(rows)], pad_id=0)  # fmt: skip
    assert common_prefix(batch.input_ids) == 40
    shapes = []
    model.get_input_embeddings().register_forward_hook(
        lambda _m, args, _o: shapes.append(tuple(args[0].shape))
    )

    def read(part):
        model.zero_grad()
        stats = token_stats(model, part, entropy=True)
        (stats.logprobs.sum() + stats.entropy.sum()).backward()
        grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
        return stats, grads

    together, grads = read(batch)
    assert shapes == [(1, 40), (3, 30)]  # the opening once, then the rests
    alone = [read(_row(batch, i, len(r))) for i, r in enumerate(rows)]
    for i, (stats, _) in enumerate(alone):
        size = len(rows[i])
        torch.testing.assert_close(together.logprobs[i, :size], stats.logprobs[0])
        torch.testing.assert_close(together.entropy[i, :size], stats.entropy[0])
    summed = [sum(g) for g in zip(*(g for _, g in alone), strict=True)]
    for a, b in zip(grads, summed, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def _row(batch: RLBatch, i: int, size: int) -> RLBatch:
    return RLBatch(batch.input_ids[i : i + 1, :size], batch.attention_mask[i : i + 1, :size],
                   batch.loss_mask[i : i + 1, :size], batch.old_logprobs[i : i + 1, :size],
                   batch.trajectory[i : i + 1])  # fmt: skip


def test_the_common_prefix_leaves_each_row_a_token_of_its_own():
    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 3, 4]])
    assert common_prefix(ids) == 3
    assert common_prefix(ids[[0, 2]]) == 3  # identical rows: all but the last
    assert common_prefix(torch.tensor([[1, 2], [3, 2]])) == 0

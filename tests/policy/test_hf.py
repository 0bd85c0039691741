from __future__ import annotations

import pytest
import torch
from peft import LoraConfig, get_peft_model

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import LAST_POSITION, HFPolicy
from evoflow.rollout.engine import RolloutSpec, rollout

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=8)
SAMPLED = SamplingParams(temperature=2.0, max_new_tokens=8)  # diverse on the tiny model


def chats(n: int = 3):
    return [
        [
            {"role": "system", "content": "Rules."},
            {"role": "user", "content": f"Task number {i}. " * (i + 1)},
        ]
        for i in range(n)
    ]


def texts(generations):
    return [g.text for g in generations]


def test_batched_equals_one_by_one(tiny):
    batch = tiny.generate(chats(), SAMPLED, seeds=[1, 2, 3])
    alone = [
        tiny.generate([c], SAMPLED, seeds=[s])[0]
        for c, s in zip(chats(), [1, 2, 3], strict=True)
    ]
    assert texts(batch) == texts(alone)
    assert [g.prompt_tokens for g in batch] == [len(tiny.encode(c)) for c in chats()]


def test_same_seed_same_sample_and_seeds_matter(tiny):
    a = tiny.generate(chats(), SAMPLED, seeds=[5, 6, 7])
    b = tiny.generate(chats(), SAMPLED, seeds=[5, 6, 7])
    c = tiny.generate(chats(), SAMPLED, seeds=[8, 9, 10])
    assert texts(a) == texts(b)
    assert texts(a) != texts(c)


def test_kv_reuse_across_turns_gives_the_same_replies(tiny):
    # Prepare: three turns of three episodes, with and without the per-episode cache
    keys = ["e0", "e1", "e2"]
    with_cache, without = chats(), chats()
    outputs_cached, outputs_plain = [], []

    # Execute
    for turn in range(3):
        seeds = [100 * turn + i for i in range(3)]
        a = tiny.generate(with_cache, SAMPLED, seeds=seeds, keys=keys)
        b = tiny.generate(without, SAMPLED, seeds=seeds)
        outputs_cached.append(texts(a))
        outputs_plain.append(texts(b))
        for chat, reply in zip(with_cache, a, strict=True):
            chat += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": f"obs {turn}"},
            ]
        for chat, reply in zip(without, b, strict=True):
            chat += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": f"obs {turn}"},
            ]

    # Assert
    assert outputs_cached == outputs_plain
    assert tiny._prefixes.episodes() == set(keys)
    tiny.forget(keys)
    assert not tiny._prefixes.episodes()


def test_prompt_that_does_not_fit_is_reported(tiny):
    long_chat = [{"role": "user", "content": "word " * 2000}]
    out = tiny.generate([long_chat, chats(1)[0]], GREEDY)
    assert out[0].finish == "context" and out[0].completion_tokens == 0
    assert out[1].finish in ("stop", "length")


@pytest.fixture(scope="module")
def adapter_dir(tmp_path_factory, tiny):
    folder = tmp_path_factory.mktemp("adapter")
    torch.manual_seed(0)
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False
    )
    peft_model = get_peft_model(type(tiny.base)(tiny.base.config), config)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_" in name:
                param.normal_(0, 0.5)
    peft_model.save_pretrained(folder)
    return str(folder)


def test_adapter_changes_outputs_and_can_be_switched_off(tiny, adapter_dir):
    base = texts(tiny.generate(chats(), GREEDY))
    adapted = texts(tiny.generate(chats(), GREEDY, adapter=adapter_dir))
    again = texts(tiny.generate(chats(), GREEDY))
    assert adapted != base
    assert again == base
    assert texts(tiny.generate(chats(), GREEDY, adapter=adapter_dir)) == adapted


def test_one_batch_can_mix_adapters(tiny, adapter_dir):
    mixed = texts(
        tiny.generate(
            chats(), SAMPLED, adapter=[adapter_dir, None, adapter_dir], seeds=[1, 2, 3]
        )
    )
    adapted = texts(
        tiny.generate(chats(), SAMPLED, adapter=adapter_dir, seeds=[1, 2, 3])
    )
    base = texts(tiny.generate(chats(), SAMPLED, seeds=[1, 2, 3]))
    assert mixed == [adapted[0], base[1], adapted[2]]


def test_merged_adapter_gives_the_replies_of_the_unmerged_one(tiny, adapter_dir):
    # Prepare: the same model with the adapter kept as PEFT layers
    unmerged = HFPolicy(
        "tiny-random-llama", max_context=1024, merge_lora=False, dtype="float32"
    )

    # Execute
    merged_out = tiny.generate(chats(), GREEDY, adapter=adapter_dir)
    plain_out = unmerged.generate(chats(), GREEDY, adapter=adapter_dir)

    # Assert: same replies, and each policy took the path it was asked for
    assert texts(merged_out) == texts(plain_out)
    assert tiny._merged is not None and unmerged._merged is None
    assert unmerged.model is not unmerged.base  # a PeftModel


def test_a_frozen_lm_head_is_not_copied_per_row(tiny, adapter_dir):
    # Prepare: the merged model serving an adapter, its weights frozen by PEFT
    tiny.generate(chats(), GREEDY, adapter=adapter_dir)
    merged = tiny._merged[1]
    head = merged.get_output_embeddings().weight
    assert not head.requires_grad
    seen = []
    hook = merged.get_output_embeddings().register_forward_pre_hook(
        lambda module, args: seen.append(args[0])
    )

    # Execute: prompts never seen, so the first logits come from a prefill pass
    fresh = [[{"role": "user", "content": f"Other task {i}."}] for i in range(4)]
    try:
        tiny.generate(fresh, GREEDY, adapter=adapter_dir)
    finally:
        hook.remove()

    # Assert: the head reads packed (rows, 1, hidden) batches. A strided slice
    # of the last positions would make matmul broadcast the frozen weight to
    # every row and copy it (evoflow.policy.hf.LAST_POSITION)
    assert seen[0].shape[:2] == (4, 1)  # the prefill pass's four rows
    assert all(x.shape[1] == 1 and x.is_contiguous() for x in seen)


def test_the_gathered_last_position_gives_the_sliced_ones_logits(tiny, adapter_dir):
    # Prepare: the frozen merged model and a left-padded prefill batch
    tiny.generate(chats(), GREEDY, adapter=adapter_dir)
    merged = tiny._merged[1]
    ids = torch.randint(5, 200, (3, 9), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    mask[1, :4] = 0

    # Execute: the head on the strided slice (int) and on the gathered index
    with torch.inference_mode():
        sliced, gathered = (
            merged(input_ids=ids, attention_mask=mask, logits_to_keep=keep).logits
            for keep in (1, LAST_POSITION)
        )

    # Assert: the same position's logits; one batched product against one per
    # row may round the last bits differently
    torch.testing.assert_close(gathered, sliced, atol=1e-5, rtol=1e-5)
    assert torch.equal(gathered.argmax(-1), sliced.argmax(-1))


def test_bf16_weights_play_the_same_greedy_episodes_as_fp32():
    # Prepare: eight 4-turn Maze episodes, greedy, fp32 and bf16 weights
    spec = RolloutSpec(
        experiment="x",
        method="m",
        split="test",
        source="eval",
        horizon=4,
        width=8,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=24),
    )
    tasks = make_env("maze").task_ids("test")[:8]

    # Execute
    played = {
        dtype: rollout(
            HFPolicy("tiny-random-llama", max_context=2048, dtype=dtype),
            lambda: make_env("maze"),
            tasks,
            spec,
            progress=False,
        )
        for dtype in ("float32", "bfloat16")
    }

    # Assert: the same chats (log-probs, recorded per turn, differ by rounding)
    fp32, bf16 = (
        [[(m.role, m.content) for m in e.messages] for e in played[d]]
        for d in ("float32", "bfloat16")
    )
    assert fp32 == bf16


def _counting(policy: HFPolicy) -> list[int]:
    """Tokens fed to ``policy``'s model, appended per forward pass."""
    fed: list[int] = []

    def hook(module, args, kwargs):
        fed.append(kwargs["input_ids"].numel())

    policy.base.register_forward_pre_hook(hook, with_kwargs=True)
    return fed


def test_a_shared_opening_is_encoded_once_and_changes_no_reply():
    # Prepare: four episodes opening with the same long instructions, one not
    rules = "Follow these rules with care. " * 12
    opened = [
        [
            {"role": "system", "content": rules},
            {"role": "user", "content": f"Task {i}."},
        ]
        for i in range(4)
    ] + [[{"role": "system", "content": "Other."}, {"role": "user", "content": "Go."}]]
    shared = HFPolicy(
        "tiny-random-llama", max_context=1024, dtype="float32", share_prefix=True
    )
    plain = HFPolicy(
        "tiny-random-llama", max_context=1024, dtype="float32", share_prefix=False
    )
    fed = {"shared": _counting(shared), "plain": _counting(plain)}
    keys = [f"e{i}" for i in range(5)]

    # Execute: a first turn, then a second from each episode's own cache
    replies = {}
    for name, policy in (("shared", shared), ("plain", plain)):
        chats = [list(c) for c in opened]
        first = policy.generate(chats, SAMPLED, seeds=[1, 2, 3, 4, 5], keys=keys)
        for chat, reply in zip(chats, first, strict=True):
            chat += [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": "Next."},
            ]
        second = policy.generate(chats, SAMPLED, seeds=[6, 7, 8, 9, 10], keys=keys)
        replies[name] = (first, second)

    # Assert: the same replies and log-probs; the opening encoded once, not 4 times
    for a, b in zip(replies["shared"], replies["plain"], strict=True):
        assert texts(a) == texts(b)
        for x, y in zip(a, b, strict=True):
            assert x.token_ids == y.token_ids
            torch.testing.assert_close(x.logprobs, y.logprobs, atol=1e-4, rtol=0)
    a, b = shared.encode(opened[0]), shared.encode(opened[1])
    opening = next(n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert opening > 32
    assert sum(fed["plain"]) - sum(fed["shared"]) == 3 * opening

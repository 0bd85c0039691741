from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from evoflow.policy.models import resolve_model
from evoflow.rollout.expert import expert_demos
from evoflow.train import SFTConfig, train_sft
from evoflow.train.sft_data import IGNORE, Example, encode, encode_within, render
from evoflow.train.steps import step_groups

QWEN3_TEMPLATE = Path(__file__).parents[1] / "fixtures" / "qwen3_chat_template.jinja"
EMPTY_THINK = "<think>\n\n</think>\n\n"


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))


@pytest.fixture(scope="module")
def chats():
    episodes = expert_demos("maze", 4, "t", seed=0)
    return [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in episodes
    ]


def labelled_text(tokenizer, example):
    return tokenizer.decode([t for t in example.labels if t != IGNORE])


def test_loss_tokens_are_exactly_the_assistant_turns(tokenizer, chats):
    chat = chats[0]
    example = encode(tokenizer, chat)
    expected = "".join(
        m["content"] + "<|im_end|>" for m in chat if m["role"] == "assistant"
    )
    assert labelled_text(tokenizer, example) == expected
    rendered = tokenizer.apply_chat_template(
        [{"role": m["role"], "content": m["content"]} for m in chat], tokenize=True
    )
    assert example.input_ids == list(rendered["input_ids"])


def test_turns_flagged_without_loss_are_not_learned(tokenizer):
    chat = [
        {"role": "user", "content": "Instructions."},
        {"role": "assistant", "content": "OK", "loss": False},
        {"role": "user", "content": "Observation."},
        {"role": "assistant", "content": "Action: go", "loss": True},
    ]
    assert labelled_text(tokenizer, encode(tokenizer, chat)) == "Action: go<|im_end|>"


def test_actions_only_turns_are_learned_from_their_action_tag_on(tokenizer):
    # Set up: four sampled replies: a tag on its own line, none, two (the ReAct
    # parser refuses the reply), and one after the thought on the same line
    chat = [
        {"role": "user", "content": "Task: open the door."},
        {"role": "assistant", "content": "Thought: Timeout! Bring magic!\nAction: go"},
        {"role": "user", "content": "You went."},
        {"role": "assistant", "content": "Thought: nothing to do"},
        {"role": "user", "content": "Invalid reply."},
        {"role": "assistant", "content": "Thought: next action: left\nAction: left"},
        {"role": "user", "content": "Invalid reply."},
        {"role": "assistant", "content": "Thought: the door. action : open door"},
    ]
    flagged = [{**m, "actions_only": True} for m in chat]

    # Execute
    whole = labelled_text(tokenizer, encode(tokenizer, chat))
    actions = labelled_text(tokenizer, encode(tokenizer, flagged))

    # Assert: by hand, each reply from its one tag (any case and spacing, the
    # space before it included) to its end-of-turn marker; the replies without
    # one tag teach nothing
    assert actions == "Action: go<|im_end|> action : open door<|im_end|>"
    assert whole.startswith("Thought: Timeout! Bring magic!\nAction: go<|im_end|>")


def test_explored_thoughts_off_masks_explored_chats_only(tokenizer, chats):
    from evoflow.train.sft_data import encode_all

    # Execute: the same expert chat, once as a demonstration, once as explored
    pairs = [(chats[0], False), (chats[0], True)]
    demo, found = encode_all(tokenizer, pairs, 4096, explored_thoughts=False)[0]
    both = encode_all(tokenizer, pairs, 4096)[0]

    # Assert: the demonstration keeps its thoughts; the explored copy learns
    # each reply's "Action: ..." line and end-of-turn marker alone
    replies = [m["content"] for m in chats[0] if m["role"] == "assistant"]
    assert labelled_text(tokenizer, demo) == "".join(r + "<|im_end|>" for r in replies)
    assert labelled_text(tokenizer, found) == "".join(
        r[r.index("Action:") :] + "<|im_end|>" for r in replies
    )
    assert labelled_text(tokenizer, both[1]) == labelled_text(tokenizer, demo)
    assert "explored_thoughts" not in SFTConfig().to_dict()
    assert SFTConfig(explored_thoughts=False).to_dict()["explored_thoughts"] is False


SYSTEM = {"role": "system", "content": "Reach the goal.", "loss": False}
TASK = {"role": "user", "content": "Task: go to 4. You are at 1.", "loss": False}


def turn(position: int) -> list[dict]:
    """One observation and the reply that answers it."""
    return [
        {"role": "user", "content": f"You are at {position}.", "loss": False},
        {"role": "assistant", "content": f"Action: leave {position}", "loss": True},
    ]


def long_chat() -> list[dict]:
    first = {"role": "assistant", "content": "Action: leave 1", "loss": True}
    closing = {"role": "user", "content": "You reached 4.", "loss": False}
    return [SYSTEM, TASK, first, *turn(2), *turn(3), closing]


def test_explored_thoughts_off_keeps_only_actions_in_a_cut_episode(tokenizer):
    from evoflow.train.sft_data import encode_all

    # Set up: an explored episode of 5 thought-and-action replies, too long
    replies = [f"Thought: I will leave {k}.\nAction: leave {k}" for k in range(1, 6)]
    chat = [SYSTEM, TASK]
    for k, reply in enumerate(replies, start=1):
        chat += [{"role": "assistant", "content": reply},
                 {"role": "user", "content": f"You are at {k + 1}.", "loss": False}]  # fmt: skip
    limit = len(encode(tokenizer, chat).input_ids) - 10

    # Execute
    (example,), cut, dropped = encode_all(tokenizer, [(chat, True)], limit, False)

    # Assert: cut to its latest replies, of which only the actions are learned
    kept = range(example.cut_turns + 1, 6)
    assert cut == 1 and dropped == 0 and example.cut_turns >= 1
    assert len(example.input_ids) <= limit
    assert labelled_text(tokenizer, example) == "".join(
        f"Action: leave {k}<|im_end|>" for k in kept
    )


def chat_ids(tokenizer, messages: list[dict]) -> list[int]:
    chat = [{"role": m["role"], "content": m["content"]} for m in messages]
    return list(tokenizer.apply_chat_template(chat, tokenize=True)["input_ids"])


@pytest.mark.parametrize("dropped", [1, 2])
def test_long_episodes_keep_opening_and_whole_turns_from_an_observation(
    tokenizer, dropped
):
    # Prepare: the chats a cut must produce, written out by hand
    closing = long_chat()[-1]
    expected = {
        1: [SYSTEM, TASK, *turn(2), *turn(3), closing],
        2: [SYSTEM, TASK, *turn(3), closing],
    }[dropped]
    budget = len(chat_ids(tokenizer, expected))
    assert budget < len(chat_ids(tokenizer, long_chat()))

    # Execute
    cut = encode_within(tokenizer, long_chat(), max_length=budget)

    # Assert: every kept action follows the observation it answers
    assert cut is not None and cut.cut_turns == dropped
    assert cut.input_ids == chat_ids(tokenizer, expected)
    kept = ["Action: leave 2", "Action: leave 3"][dropped - 1 :]
    assert labelled_text(tokenizer, cut) == "".join(k + "<|im_end|>" for k in kept)


def test_episode_too_long_even_for_its_last_turn_is_dropped(tokenizer):
    # Prepare
    last_only = [SYSTEM, TASK, *turn(3), long_chat()[-1]]

    # Execute
    cut = encode_within(
        tokenizer, long_chat(), max_length=len(chat_ids(tokenizer, last_only)) - 1
    )

    # Assert
    assert cut is None


def test_training_warns_about_episodes_it_cannot_keep(tmp_path, tokenizer, caplog):
    # Prepare: one chat that fits and one whose opening and last turn do not
    short = [SYSTEM, TASK, *turn(3)]
    budget = len(chat_ids(tokenizer, short))
    wordy = [{"role": "user", "content": "You are at 4.", "loss": False},
             {"role": "assistant", "content": "Action: " + "wait " * 40, "loss": True}]  # fmt: skip
    config = SFTConfig(max_length=budget, epochs=1, batch_size=1)

    # Execute
    with caplog.at_level("WARNING", logger="evoflow.train.sft_trainer"):
        summary = train_sft([short, [*long_chat()[:-1], *wordy]], "tiny-random-llama",
                            tmp_path / "adapter", config, progress=False)  # fmt: skip

    # Assert: one episode trained, one counted as dropped and named in a warning
    assert summary["examples"] == 1 and summary["episodes_dropped"] == 1
    assert "1 of 2 episodes are not trained" in caplog.text
    assert f"max_length={budget}" in caplog.text


ALTERNATING = (
    "{% set system = messages[0]['content'] if messages[0]['role'] == 'system' "
    "else '' %}{% set chat = messages[1:] if system else messages %}"
    "{% for m in chat %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
    "{% if m['role'] == 'user' %}{{ '[INST] ' + (system + ' ' if loop.first "
    "and system else '') + m['content'] + ' [/INST]' }}"
    "{% else %}{{ ' ' + m['content'] + ' </s>' }}{% endif %}{% endfor %}"
)


def test_cut_under_a_template_that_wants_alternating_roles():
    # Prepare: a Llama-2-like template refuses two user messages in a row
    strict = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    strict.chat_template = ALTERNATING
    expected = (
        "[INST] Reach the goal. Task: go to 4. You are at 1.\n\nYou are at 3. "
        "[/INST] Action: leave 3 </s>[INST] You reached 4. [/INST]"
    )
    budget = len(strict(expected, add_special_tokens=False)["input_ids"])

    # Execute
    cut = encode_within(strict, long_chat(), max_length=budget)

    # Assert: the task and the kept observation share one user message
    assert cut is not None and cut.cut_turns == 2
    assert strict.decode(cut.input_ids) == expected
    assert labelled_text(strict, cut) == " Action: leave 3 </s>"


@pytest.fixture(scope="module")
def qwen3_tokenizer():
    """The tiny model's tokenizer writing chats with Qwen3's template."""
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    tokenizer.chat_template = QWEN3_TEMPLATE.read_text()
    return tokenizer


@pytest.mark.parametrize("closing_observation", [True, False])
def test_qwen3_template_labels_exactly_the_replies(
    qwen3_tokenizer, closing_observation
):
    # Prepare: three turns; without a closing observation the last reply is the
    # chat's last message, which Qwen3 renders after an empty think block
    chat = [SYSTEM, TASK, *long_chat()[2:3], *turn(2), *turn(3)]
    if closing_observation:
        chat.append(long_chat()[-1])
    plain = [{"role": m["role"], "content": m["content"]} for m in chat]
    rendered = qwen3_tokenizer.apply_chat_template(
        plain, tokenize=False, enable_thinking=False
    )
    assert (EMPTY_THINK in rendered) is not closing_observation

    # Execute
    example = encode(qwen3_tokenizer, chat)

    # Assert
    replies = ["Action: leave 1", "Action: leave 2", "Action: leave 3"]
    assert labelled_text(qwen3_tokenizer, example) == "".join(
        r + "<|im_end|>" for r in replies
    )
    assert qwen3_tokenizer.decode(example.input_ids) == rendered


def test_qwen3_generation_prompt_closes_an_empty_think_block(qwen3_tokenizer):
    # Execute
    prompt = render(qwen3_tokenizer, [SYSTEM, TASK], prompt=True)

    # Assert
    assert prompt == (
        "<|im_start|>system\nReach the goal.<|im_end|>\n"
        "<|im_start|>user\nTask: go to 4. You are at 1.<|im_end|>\n"
        "<|im_start|>assistant\n" + EMPTY_THINK
    )


@pytest.mark.slow
def test_tiny_model_overfits_four_episodes_and_reloads(tmp_path, chats):
    # Prepare
    config = SFTConfig(
        lora_r=16,
        lora_alpha=32,
        learning_rate=1e-2,
        epochs=30,
        batch_size=4,
        lora_dropout=0.0,
    )

    # Execute
    summary = train_sft(chats, "tiny-random-llama", tmp_path / "adapter", config,
                        loss_log=tmp_path / "loss.jsonl", metadata={"buffer_sha256": "x" * 64},
                        progress=False)  # fmt: skip

    # Assert: the loss fell well below its start
    assert summary["loss_curve"][0] > 10
    assert summary["final_loss"] < 0.5 * summary["loss_curve"][0]
    assert summary["optimizer_steps"] == 30 and summary["buffer_sha256"] == "x" * 64
    assert len((tmp_path / "loss.jsonl").read_text().splitlines()) == 30
    saved = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert saved["r"] == 16 and saved["peft_type"] == "LORA"
    assert saved["base_model_name_or_path"] == "tiny-random-llama"
    assert saved["target_modules"] == [
        "down_proj",
        "gate_proj",
        "k_proj",
        "o_proj",
        "q_proj",
        "up_proj",
        "v_proj",
    ]
    # The adapter reloads with transformers + peft and changes the model's output
    from peft import PeftModel

    base = AutoModelForCausalLM.from_pretrained(resolve_model("tiny-random-llama"))
    ids = torch.tensor(
        [
            encode(
                AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama")),
                chats[0],
            ).input_ids
        ]
    )
    before = base(ids).logits
    tuned = PeftModel.from_pretrained(base, tmp_path / "adapter")
    assert not torch.allclose(before, tuned(ids).logits, atol=1e-3)


def test_training_from_an_init_adapter_starts_from_its_weights(tmp_path, chats):
    config = SFTConfig(
        lora_r=4,
        lora_alpha=8,
        learning_rate=1e-2,
        epochs=2,
        batch_size=4,
        lora_dropout=0.0,
    )
    train_sft(chats, "tiny-random-llama", tmp_path / "a", config, progress=False)
    still = SFTConfig(
        lora_r=4,
        lora_alpha=8,
        learning_rate=1e-12,
        epochs=1,
        batch_size=4,
        lora_dropout=0.0,
    )
    from_a = train_sft(
        chats,
        "tiny-random-llama",
        tmp_path / "b",
        still,
        init_adapter=tmp_path / "a",
        progress=False,
    )
    fresh = train_sft(chats, "tiny-random-llama", tmp_path / "c", still, progress=False)
    a = load_file(tmp_path / "a" / "adapter_model.safetensors")
    b = load_file(tmp_path / "b" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(
        torch.allclose(a[k], b[k], atol=1e-6) for k in a
    )
    assert from_a["loss_curve"][0] < fresh["loss_curve"][0]
    with pytest.raises(ValueError, match="adapter has r=4"):
        train_sft(
            chats,
            "tiny-random-llama",
            tmp_path / "d",
            SFTConfig(lora_r=8),
            init_adapter=tmp_path / "a",
        )


def test_config_checks():
    with pytest.raises(ValueError, match="learning_rate"):
        SFTConfig(learning_rate=0)
    with pytest.raises(ValueError, match="lora_r"):
        SFTConfig(lora_r=0)
    with pytest.raises(ValueError, match="steps"):
        SFTConfig(steps=0)


def test_fixed_steps_cycle_small_buffers_and_sample_large_ones():
    # Prepare: three examples of different lengths, micro-batches of one
    examples = [Example([1] * n, [1] * n, 0) for n in (3, 5, 7)]

    # Execute
    small = step_groups(examples, SFTConfig(steps=8, batch_size=1))
    large = step_groups(examples, SFTConfig(steps=2, batch_size=1, epochs=5))
    accumulated = step_groups(examples, SFTConfig(steps=2, batch_size=1, grad_accum=2))

    # Assert: 8 steps are 3 whole passes cut at 8 (3 + 3 + 2 uses), each pass
    # a permutation; 2 steps use 2 distinct examples whatever epochs says; with
    # accumulation a step holds 2 micro-batches
    lengths = [len(group[0][0].input_ids) for group in small]
    assert len(small) == 8 and all(len(group) == 1 for group in small)
    assert sorted(lengths[:3]) == sorted(lengths[3:6]) == [3, 5, 7]
    assert sorted(lengths.count(n) for n in (3, 5, 7)) == [2, 3, 3]
    assert len(large) == 2 and len({len(g[0][0].input_ids) for g in large}) == 2
    assert [len(group) for group in accumulated] == [2, 2]
    assert SFTConfig().to_dict().get("steps") is None
    assert SFTConfig(steps=4).to_dict()["steps"] == 4


def test_explored_steps_add_a_budget_of_their_own_beside_the_demonstrations():
    # Set up: 4 demonstrations (lengths 2-5) and explored episodes (lengths 10+)
    demos = [Example([1] * n, [1] * n, 0) for n in (2, 3, 4, 5)]
    found = [Example([1] * n, [1] * n, 0, explored=True) for n in (10, 11, 12)]
    config = SFTConfig(steps=8, explored_steps=4, batch_size=1, epochs=2)

    # Execute
    many = step_groups(demos + found, config)
    one = step_groups(demos + found[:1], config)
    none = step_groups(demos, config)

    # Assert: the demonstrations keep their 8 steps (two passes over 4) however
    # many explored episodes there are; the explored ones add min(4, 2 passes):
    # 4 steps over 3 episodes, 2 over 1, none over none
    def uses(groups):
        lengths = [len(group[0][0].input_ids) for group in groups]
        return sum(n < 10 for n in lengths), sum(n >= 10 for n in lengths)

    assert uses(many) == (8, 4) and uses(one) == (8, 2) and uses(none) == (8, 0)
    demo_lengths = sorted(
        len(g[0][0].input_ids) for g in many if len(g[0][0].input_ids) < 10
    )
    assert demo_lengths == [2, 2, 3, 3, 4, 4, 5, 5]
    explored = [len(g[0][0].input_ids) for g in many if len(g[0][0].input_ids) >= 10]
    assert sorted(explored[:3]) == [10, 11, 12]  # a whole pass before a repeat
    # the two pools are mixed, not appended one after the other
    order = [len(g[0][0].input_ids) >= 10 for g in many]
    assert order != sorted(order)
    assert SFTConfig(steps=8, explored_steps=4).to_dict()["explored_steps"] == 4
    assert "explored_steps" not in SFTConfig(steps=8).to_dict()
    with pytest.raises(ValueError, match="explored_steps"):
        SFTConfig(explored_steps=4)


def test_initial_adapter_is_what_a_fresh_training_starts_from(chats, tmp_path):
    from evoflow.train.sft_trainer import initial_adapter

    config = SFTConfig(
        epochs=1, batch_size=2, max_length=512, learning_rate=1e-20, seed=11
    )
    train_sft(chats, "tiny-random-llama", tmp_path / "a", config, progress=False)
    trained = load_file(
        tmp_path / "a" / "adapter_model.safetensors"
    )  # lr ~0: as it began
    rebuilt = initial_adapter("tiny-random-llama", config)
    assert trained.keys() == rebuilt.keys()
    assert any(float(t.abs().sum()) > 0 for t in rebuilt.values())
    assert all(
        torch.allclose(trained[k], rebuilt[k], rtol=0, atol=1e-12) for k in trained
    )
    other = initial_adapter("tiny-random-llama", SFTConfig(seed=12))
    assert not all(torch.equal(other[k], rebuilt[k]) for k in rebuilt)


def test_proximal_gradient_is_the_gradient_of_fedprox_term():
    from evoflow.train.sft_trainer import proximal_grad_

    torch.manual_seed(0)
    params = [torch.randn(3, 4, requires_grad=True), torch.randn(5, requires_grad=True)]
    anchor = [p.detach() + torch.randn_like(p) for p in params]
    task = sum((p**2).sum() for p in params)
    task.backward()
    proximal_grad_(params, anchor, 0.7)
    mine = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    objective = sum((p**2).sum() for p in params)
    objective = objective + 0.7 / 2 * sum(
        ((p - a) ** 2).sum() for p, a in zip(params, anchor, strict=True)
    )
    objective.backward()
    assert all(torch.allclose(m, p.grad) for m, p in zip(mine, params, strict=True))


def test_fedprox_keeps_a_client_near_its_start(chats, tmp_path):
    from evoflow.train.sft_trainer import initial_adapter

    def drift(mu: float) -> float:
        config = SFTConfig(epochs=2, batch_size=2, max_length=512, learning_rate=1e-2,
                           seed=3, proximal_mu=mu)  # fmt: skip
        train_sft(
            chats, "tiny-random-llama", tmp_path / str(mu), config, progress=False
        )
        trained = load_file(tmp_path / str(mu) / "adapter_model.safetensors")
        start = initial_adapter("tiny-random-llama", config)
        return sum(float(((trained[k] - start[k]) ** 2).sum()) for k in start) ** 0.5

    free, held = drift(0.0), drift(100.0)
    assert held < 0.5 * free, (held, free)
    assert "proximal_mu" not in SFTConfig().to_dict()  # unset: job parameters unchanged
    assert SFTConfig(proximal_mu=0.1).to_dict()["proximal_mu"] == 0.1


def test_a_buffer_trains_its_explored_episodes_on_their_own_budget(tmp_path):
    from dataclasses import replace

    from evoflow.store import ShardMeta, write_shard
    from evoflow.store.manifest import write_shards_manifest
    from evoflow.train.run import train_from_manifest

    # Set up: a buffer of 2 expert demonstrations and 1 explored success
    demos = expert_demos("maze", 3, "t", seed=0)
    episodes = [*demos[:2], replace(demos[2], source="explore")]
    meta = ShardMeta(experiment="t", config_hash="h", model_id="tiny", seed=0)
    write_shard(tmp_path / "b.parquet", episodes, meta)
    write_shards_manifest(tmp_path / "b.json", [tmp_path / "b.parquet"])
    sft = {"steps": 3, "explored_steps": 5, "batch_size": 1, "epochs": 2,
           "max_length": 512, "learning_rate": 1e-4}  # fmt: skip

    # Execute
    summary = train_from_manifest(
        tmp_path / "b.json", "tiny-random-llama", tmp_path / "a", sft, progress=False
    )

    # Assert: 3 steps over the demonstrations, then min(5, two passes over the
    # one explored episode) = 2 more; without its thoughts the explored episode
    # (trained twice) teaches fewer tokens
    assert summary["optimizer_steps"] == 5
    assert summary["buffer_explored_successes"] == 1
    actions = train_from_manifest(tmp_path / "b.json", "tiny-random-llama",
                                  tmp_path / "c", {**sft, "explored_thoughts": False},
                                  progress=False)  # fmt: skip
    assert actions["optimizer_steps"] == 5
    assert actions["trained_tokens"] < summary["trained_tokens"]

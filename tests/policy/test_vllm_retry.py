"""The vllm backend's thought budget: a constrained reply whose thought ran past
the token budget before its action is decoded again with a shorter thought.

vLLM's decoding is replaced by a stand-in that writes the longest thought its
pattern allows (up to LONGEST characters) and is cut off at the token budget as
an engine is, so the loop around it runs without vLLM (``test_vllm_backend``
runs the real engine).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from transformers import AutoTokenizer

from evoflow.policy.base import ActionChoice, SamplingParams
from evoflow.policy.models import resolve_model
from evoflow.policy.vllm import VLLMPolicy

CHOICE = ActionChoice(("a l o f t", "c r i m p"))
BUDGET = 40  # new tokens
LONGEST = 60  # characters of thought the stand-in writes at most


def fake_policy(tokenizer, calls):
    policy = object.__new__(VLLMPolicy)
    policy._tokenizer, policy.max_context, policy.model_id = tokenizer, 4096, "fake"

    def decode(rows, prompts, params, seeds, patterns, adapters):
        out = []
        for i in rows:
            if patterns[i] is None:  # a free row
                cap = LONGEST
            else:
                cap = int(re.search(r"\{0,(\d+)\}\\n", patterns[i]).group(1))
                calls.append(cap)
            text = "Thought: " + " ." * (min(cap, LONGEST) // 2) + "\nAction: c r i m p"
            ids = tokenizer.encode(text, add_special_tokens=False)[
                : params.max_new_tokens
            ]
            cut = len(ids) == params.max_new_tokens
            text = tokenizer.decode(ids) if cut else text
            out.append(
                SimpleNamespace(
                    text=text,
                    token_ids=ids,
                    logprobs=[{t: SimpleNamespace(logprob=-0.5)} for t in ids],
                    finish_reason="length" if cut else "stop",
                )
            )
        return out

    policy._decode = decode
    return policy


def test_a_thought_cut_off_by_the_budget_is_decoded_again_shorter():
    # Prepare: " ." costs a token per two characters, so the first cap overruns
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))
    calls: list[int] = []
    policy = fake_policy(tokenizer, calls)
    chat = [{"role": "user", "content": "Guess the word."}]
    params = SamplingParams(temperature=0.0, max_new_tokens=BUDGET)
    # Execute
    [reply] = policy.generate([chat], params, choices=[CHOICE])
    # Assert: decoded more than once, each time with a smaller cap, ending complete
    assert len(calls) >= 2 and calls == sorted(calls, reverse=True)
    assert len(set(calls)) == len(calls)
    assert reply.text.endswith("Action: c r i m p") and reply.finish == "stop"


def test_a_reply_that_fits_its_budget_is_decoded_once():
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))
    calls: list[int] = []
    policy = fake_policy(tokenizer, calls)
    chat = [{"role": "user", "content": "Guess the word."}]
    [reply] = policy.generate([chat], SamplingParams(max_new_tokens=400),
                              choices=[CHOICE])  # fmt: skip
    assert len(calls) == 1 and reply.finish == "stop"


def test_a_constrained_row_stores_no_logprobs_and_a_free_row_its_own():
    # vLLM masks the logits before taking log-probs: a constrained row's would
    # be the masked distribution's, so none are kept
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))
    policy = fake_policy(tokenizer, [])
    chat = [{"role": "user", "content": "Guess the word."}]
    held, free = policy.generate([chat, chat], SamplingParams(max_new_tokens=400),
                                 choices=[CHOICE, None])  # fmt: skip
    assert held.logprobs is None
    assert free.logprobs == [-0.5] * free.completion_tokens

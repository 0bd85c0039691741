"""Prompts for acting are rendered with thinking off, whatever the backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from transformers import AutoTokenizer

from evoflow.policy.base import SamplingParams, prompt_ids
from evoflow.policy.models import resolve_model
from evoflow.policy.openai import OpenAIPolicy

QWEN3_TEMPLATE = Path(__file__).parents[1] / "fixtures" / "qwen3_chat_template.jinja"
CHAT = [{"role": "user", "content": "You are at 1."}]
QWEN3_PROMPT = (
    "<|im_start|>user\nYou are at 1.<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


@pytest.fixture
def qwen3_tokenizer():
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    tokenizer.chat_template = QWEN3_TEMPLATE.read_text()
    return tokenizer


def test_qwen3_prompt_ends_with_an_empty_think_block(qwen3_tokenizer):
    # Execute
    ids = prompt_ids(qwen3_tokenizer, CHAT)

    # Assert
    assert qwen3_tokenizer.decode(ids) == QWEN3_PROMPT


def test_templates_without_a_thinking_switch_are_unchanged():
    # Prepare
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("tiny-random-llama"))
    plain = tokenizer.apply_chat_template(CHAT, add_generation_prompt=True)

    # Execute / Assert
    assert prompt_ids(tokenizer, CHAT) == list(plain["input_ids"])


def test_hf_policy_renders_qwen3_prompts_with_thinking_off(tiny, qwen3_tokenizer):
    # Prepare
    own = tiny.tokenizer.chat_template
    tiny.tokenizer.chat_template = qwen3_tokenizer.chat_template

    # Execute
    try:
        ids = tiny.encode(CHAT)
    finally:
        tiny.tokenizer.chat_template = own

    # Assert
    assert tiny.tokenizer.decode(ids) == QWEN3_PROMPT


def recording_app(bodies: list[dict]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request):
        bodies.append(await request.json())
        return {"choices": [{"message": {"content": "Action: wait"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}  # fmt: skip

    return app


@pytest.mark.parametrize(
    "kwargs, sent",
    [({}, {"enable_thinking": False}), ({"chat_template_kwargs": None}, None)],
)
def test_openai_requests_ask_for_thinking_off(run_app, kwargs, sent):
    # Prepare
    bodies: list[dict] = []
    policy = OpenAIPolicy("m", base_url=run_app(recording_app(bodies)), **kwargs)

    # Execute
    try:
        policy.generate([CHAT], SamplingParams(max_new_tokens=4))
    finally:
        policy.close()

    # Assert
    assert bodies[0].get("chat_template_kwargs") == sent


def test_a_format_that_asks_for_thinking_gets_an_open_prompt(qwen3_tokenizer, run_app):
    # Prepare: a reply format's template options travel in SamplingParams
    thinking = SamplingParams(max_new_tokens=4, template=(("enable_thinking", True),))
    bodies: list[dict] = []
    policy = OpenAIPolicy("m", base_url=run_app(recording_app(bodies)))

    # Execute
    ids = prompt_ids(qwen3_tokenizer, CHAT, thinking.template)
    try:
        policy.generate([CHAT], thinking)
    finally:
        policy.close()

    # Assert: no closed think block, and the server is asked for thinking too
    assert qwen3_tokenizer.decode(ids) == QWEN3_PROMPT.removesuffix(
        "<think>\n\n</think>\n\n"
    )
    assert bodies[0]["chat_template_kwargs"] == {"enable_thinking": True}

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from evoflow.policy.base import PolicyError, SamplingParams
from evoflow.policy.openai import OpenAIPolicy
from evoflow.policy.server import create_app

PARAMS = SamplingParams(temperature=0.0, max_new_tokens=8)
CHATS = [
    [{"role": "user", "content": f"Say something about {topic}."}]
    for topic in ("mazes", "words")
]


def test_openai_backend_against_a_served_model(tiny, run_app):
    url = run_app(create_app(tiny))
    remote = OpenAIPolicy(tiny.model_id, base_url=url)
    try:
        over_http = remote.generate(CHATS, PARAMS, seeds=[1, 2])
    finally:
        remote.close()
    direct = tiny.generate(CHATS, PARAMS, seeds=[1, 2])
    assert [g.text for g in over_http] == [g.text for g in direct]
    assert [g.prompt_tokens for g in over_http] == [g.prompt_tokens for g in direct]


def flaky_app(failures: int) -> FastAPI:
    app = FastAPI()
    calls = {"n": 0}

    @app.post("/v1/chat/completions")
    async def complete():
        calls["n"] += 1
        if calls["n"] <= failures:
            return JSONResponse({"error": "busy"}, status_code=503)
        return {"choices": [{"message": {"content": "Action: move up"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4}}  # fmt: skip

    @app.post("/slow/v1/chat/completions")
    async def slow():
        await asyncio.sleep(2)
        return {}

    return app


def test_busy_server_is_retried(run_app):
    url = run_app(flaky_app(failures=2))
    policy = OpenAIPolicy("m", base_url=url, retries=3, backoff=0.01)
    assert policy.generate(CHATS[:1], PARAMS)[0].text == "Action: move up"
    policy.close()


def test_persistent_failure_and_timeouts_raise(run_app):
    url = run_app(flaky_app(failures=100))
    policy = OpenAIPolicy("m", base_url=url, retries=1, backoff=0.01)
    with pytest.raises(PolicyError, match="failed after 2 tries: HTTP 503"):
        policy.generate(CHATS[:1], PARAMS)
    policy.close()
    slow = OpenAIPolicy(
        "m", base_url=url + "/slow", timeout=0.2, retries=1, backoff=0.01
    )
    with pytest.raises(PolicyError, match="failed after 2 tries"):
        slow.generate(CHATS[:1], PARAMS)
    slow.close()


def test_replies_are_capped_in_bytes(run_app):
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def huge():
        return {
            "choices": [
                {"message": {"content": "x" * 100_000}, "finish_reason": "stop"}
            ],
            "usage": {},
        }

    url = run_app(app)
    policy = OpenAIPolicy("m", base_url=url)
    out = policy.generate(CHATS[:1], SamplingParams(max_reply_bytes=1000))[0]
    assert len(out.text) == 1000 and out.finish == "length"
    policy.close()

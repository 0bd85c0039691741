"""Serve any evoflow policy behind a minimal OpenAI-compatible API.

``POST /v1/chat/completions`` (model, messages, temperature, top_p, max_tokens,
seed) and ``POST /v1/load_lora_adapter`` (lora_name, lora_path), the subset the
``openai`` backend uses — so a CPU box can share one loaded model with several
workflow jobs, and the ``openai`` backend is tested against a real model.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from evoflow.policy.base import Policy, PolicyError, SamplingParams


class ChatMessage(BaseModel):
    role: Annotated[str, Field(pattern="^(system|user|assistant)$")]
    content: Annotated[str, Field(max_length=200_000)]


class CompletionRequest(BaseModel):
    model: str
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    temperature: Annotated[float, Field(ge=0)] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    max_tokens: Annotated[int, Field(ge=1, le=32_768)] = 256
    seed: int | None = None


class LoadAdapter(BaseModel):
    lora_name: Annotated[str, Field(min_length=1, max_length=128)]
    lora_path: str


def create_app(policy: Policy) -> FastAPI:
    """An ASGI app answering chat completions with ``policy`` (one call at a time)."""
    app = FastAPI(
        title=f"evoflow policy {policy.model_id}", docs_url=None, redoc_url=None
    )
    adapters: dict[str, str] = {}
    lock = asyncio.Lock()

    @app.post("/v1/load_lora_adapter")
    async def load(body: LoadAdapter) -> dict:
        adapters[body.lora_name] = body.lora_path
        return {"loaded": body.lora_name}

    @app.post("/v1/chat/completions")
    async def complete(body: CompletionRequest):
        if body.model != policy.model_id and body.model not in adapters:
            return JSONResponse(
                {"error": {"message": f"unknown model {body.model!r}"}}, status_code=404
            )
        params = SamplingParams(
            temperature=body.temperature,
            top_p=body.top_p,
            max_new_tokens=body.max_tokens,
        )
        chat = [m.model_dump() for m in body.messages]
        seeds = [body.seed or 0]
        async with lock:  # the model is not re-entrant; requests queue here
            try:
                out = await asyncio.to_thread(
                    policy.generate, [chat], params, adapters.get(body.model), seeds
                )
            except PolicyError as exc:
                return JSONResponse({"error": {"message": str(exc)}}, status_code=500)
        generation = out[0]
        return {
            "id": f"chatcmpl-{time.time_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": generation.text},
                    "finish_reason": "length"
                    if generation.finish != "stop"
                    else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": generation.prompt_tokens,
                "completion_tokens": generation.completion_tokens,
                "total_tokens": generation.prompt_tokens + generation.completion_tokens,
            },
        }

    return app

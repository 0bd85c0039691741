"""The ``openai`` backend: any OpenAI-compatible ``/v1/chat/completions`` server.

Typical use is ``vllm serve <model> --enable-lora`` on a GPU node. A LoRA adapter
is addressed by name: the backend registers the folder once through vLLM's
``/v1/load_lora_adapter`` (the server needs ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=1``)
under ``evoflow-<sha256[:12]>`` and then asks for that model name.

Every request asks the server to render the chat with thinking off, through
``chat_template_kwargs`` — vLLM's (and SGLang's) extension of the request body,
which Qwen3's template reads as ``enable_thinking``; templates without the switch
ignore it and evoflow's own server (``evoflow.policy.server``) ignores the field.
For a server that refuses unknown fields, pass ``chat_template_kwargs=None``.

Chats of a batch are sent concurrently (one request each). Every request has a
timeout; connection failures, 429 and 5xx answers are retried with backoff; a
request that still fails raises ``PolicyError``. Replies are capped in bytes.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from evoflow.policy.adapters import adapter_digest
from evoflow.policy.base import (
    ACTING_TEMPLATE_KWARGS,
    Adapters,
    Chat,
    Generation,
    Policy,
    PolicyError,
    SamplingParams,
    per_row,
    refuse_choices,
    truncate_reply,
)

log = logging.getLogger(__name__)
RETRY_STATUS = {429, 500, 502, 503, 504}


class OpenAIPolicy(Policy):
    """Generate through an OpenAI-compatible HTTP server.

    Parameters
    ----------
    model
        the served model name (``--served-model-name`` or the model path).
    base_url
        server root, e.g. ``http://gpu-node:8000`` (``/v1`` is appended).
    api_key
        bearer token, if the server wants one.
    concurrency
        requests in flight at once.
    timeout, retries, backoff
        per-request timeout (s), extra attempts, first retry delay (s).
    chat_template_kwargs
        sent with every request, under the sampling's own (``SamplingParams.
        template``, the reply format's: thinking off); None sends nothing.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        max_context: int = 4096,
        concurrency: int = 16,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        chat_template_kwargs: dict | None = ACTING_TEMPLATE_KWARGS,
    ) -> None:
        self.model_id = model
        self.max_context = max_context
        self.base_url = base_url.rstrip("/")
        self._retries = retries
        self._backoff = backoff
        self._template_kwargs = (
            None if chat_template_kwargs is None else dict(chat_template_kwargs)
        )
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            limits=httpx.Limits(max_connections=concurrency),
        )
        self._pool = ThreadPoolExecutor(max_workers=concurrency)
        self._loaded: set[str] = set()

    def generate(
        self,
        chats: list[Chat],
        params: SamplingParams,
        adapter: Adapters = None,
        seeds: list[int] | None = None,
        keys: list[str] | None = None,
        choices=None,
    ) -> list[Generation]:
        refuse_choices("openai", choices)
        models = [
            self._adapter_name(a) if a else self.model_id
            for a in per_row(adapter, len(chats))
        ]
        seeds = seeds or [None] * len(chats)
        jobs = [
            self._pool.submit(self._complete, chat, params, model, seed)
            for chat, model, seed in zip(chats, models, seeds, strict=True)
        ]
        return [job.result() for job in jobs]

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._http.close()

    def _complete(
        self, chat: Chat, params: SamplingParams, model: str, seed
    ) -> Generation:
        body = {
            "model": model,
            "messages": chat,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_new_tokens,
        }
        if seed is not None:
            body["seed"] = int(seed) % (2**31)
        if self._template_kwargs is not None:
            body["chat_template_kwargs"] = {
                **self._template_kwargs,
                **dict(params.template),
            }
        data = self._post("/v1/chat/completions", body)
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
            usage = data.get("usage") or {}
        except (KeyError, IndexError, TypeError) as exc:
            raise PolicyError(
                f"{self.base_url}: malformed completion ({exc!r}): {str(data)[:200]}"
            ) from None
        text, cut = truncate_reply(str(text), params.max_reply_bytes)
        finish = "length" if cut or choice.get("finish_reason") == "length" else "stop"
        return Generation(
            text,
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            finish,
        )

    def _adapter_name(self, adapter: str) -> str:
        name = f"evoflow-{adapter_digest(adapter)[:12]}"
        if name not in self._loaded:
            response = self._http.post(
                "/v1/load_lora_adapter",
                json={"lora_name": name, "lora_path": str(adapter)},
            )
            if response.status_code >= 400 and "already" not in response.text.lower():
                raise PolicyError(
                    f"{self.base_url}: could not load adapter {adapter} "
                    f"(HTTP {response.status_code}: {response.text[:200]}); start vLLM with "
                    "--enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=1"
                )
            self._loaded.add(name)
        return name

    def _post(self, path: str, body: dict) -> dict:
        delay = self._backoff
        for attempt in range(self._retries + 1):
            try:
                response = self._http.post(path, json=body)
            except httpx.TransportError as exc:
                problem = repr(exc)
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise PolicyError(
                            f"{self.base_url}{path}: answer is not JSON"
                        ) from None
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUS:
                    raise PolicyError(f"{self.base_url}{path}: {problem}")
            if attempt < self._retries:
                log.warning(
                    "openai: %s failed (%s); retry in %.1fs", path, problem, delay
                )
                time.sleep(delay)
                delay *= 2
        raise PolicyError(
            f"{self.base_url}{path} failed after {self._retries + 1} tries: {problem}"
        )

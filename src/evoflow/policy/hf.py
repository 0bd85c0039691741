"""The ``hf`` backend: transformers + PEFT, batched, with per-episode KV caches.

A multi-turn episode re-sends its whole history every turn. Instead of encoding
it again, the backend keeps each episode's key/value cache (``evoflow.policy.kv``)
and only encodes the tokens that are new since the last call. Episodes that
start in the same call and open with the same tokens (an env's instructions)
can share one encoding of that opening (``share_prefix``, off by default). The
decoding loop itself is ``evoflow.policy.decoding``.

Adapters: a batch may mix LoRA adapters (PEFT's per-row ``adapter_names``).
When one adapter serves the whole batch — evaluation of a global adapter,
exploration of a client — and ``merge_lora`` is on (the default on CPU), the
adapter is folded into a copy of the base weights once, so decoding runs at the
base model's speed instead of paying two extra small matmuls per linear layer.

Weights are bf16 where the hardware computes bf16 fast (``evoflow.precision``),
fp32 elsewhere.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import torch
from transformers.cache_utils import Cache

import evoflow.policy.lean_import  # noqa: F401  (before transformers' models)
from evoflow.envs.formats import NO_THINKING
from evoflow.policy.adapters import adapter_digest
from evoflow.policy.attention import attention_implementation
from evoflow.policy.base import (
    ActionChoice,
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
from evoflow.policy.constrain import Vocabulary, constraints_for
from evoflow.policy.decoding import decode
from evoflow.policy.kv import Prefix, PrefixStore, SlotLayer, shared_prefixes
from evoflow.policy.models import resolve_model
from evoflow.precision import resolve_dtype

log = logging.getLogger(__name__)
BASE = "__base__"  # PEFT's name for "no adapter" in a mixed batch
# New episodes whose prompts open with at least this many equal tokens share one
# encoding of that opening (``share_prefix``).
SHARED_MINIMUM = 32
# The LM head reads only the last position. An index tensor (not the int 1)
# gathers it into a contiguous (rows, 1, hidden) batch: the int's slice is a
# strided view, which ``matmul`` folds into one product only while the head's
# weight requires grad; once PEFT has frozen the weights (every adapter-serving
# model) it broadcasts the 49,152 x 576 weight to every row and copies it (453 MB
# in bf16 for 8 rows, 1.8 of a 2.4 s prefill pass at one thread).
LAST_POSITION = torch.tensor([-1])


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
        ``auto`` (bf16 where it is fast, else fp32), ``float32`` or ``bfloat16``.
    reuse_cache
        keep per-episode KV caches between calls (needs ``keys``).
    merge_lora
        fold a batch-wide adapter into a copy of the weights (None: on CPU only,
        where the copy is cheap and the unmerged LoRA costs most).
    share_prefix
        rows of one call that start an episode and open with the same tokens
        (an env's instructions) encode that opening once. Off by default: in
        bf16 the opening's rounding then differs, which changes some greedy
        choices (exact in fp32; see benchmarks/prefix_sharing.py).
    """

    def __init__(
        self,
        model: str,
        max_context: int = 4096,
        batch_size: int = 32,
        dtype: str = "auto",
        device: str | None = None,
        reuse_cache: bool = True,
        merge_lora: bool | None = None,
        share_prefix: bool = False,
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path = resolve_model(model)
        self.model_id = model
        self.max_context = max_context
        self.batch_size = batch_size
        self.reuse_cache = reuse_cache
        self.share_prefix = share_prefix
        self.device = torch.device(
            device or ("cuda" if torch.cuda.is_available() else "cpu")
        )
        self.dtype = resolve_dtype(dtype, self.device)
        self.merge_lora = (
            self.device.type == "cpu" if merge_lora is None else merge_lora
        )
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.base = AutoModelForCausalLM.from_pretrained(
            self.path, dtype=self.dtype, attn_implementation=attention_implementation()
        ).to(self.device)
        self.base.eval()
        self.model = self.base  # becomes a PeftModel once an adapter is loaded
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.stop_ids = _stop_ids(self.tokenizer)
        self._paths: dict[str, str] = {}  # digest -> adapter folder
        self._adapters: dict[str, str] = {}  # digest -> name inside the PeftModel
        self._merged: tuple[str, torch.nn.Module] | None = None
        self._prefixes = PrefixStore()
        self._vocabulary: Vocabulary | None = None

    # --- Policy ------------------------------------------------------------

    def generate(
        self,
        chats: list[Chat],
        params: SamplingParams,
        adapter: Adapters = None,
        seeds: list[int] | None = None,
        keys: list[str] | None = None,
        choices: list[ActionChoice | None] | None = None,
    ) -> list[Generation]:
        seeds = seeds or [0] * len(chats)
        rows_choice = constraints_for(self._vocab(choices), choices, len(chats))
        keys = keys if (keys and self.reuse_cache) else [None] * len(chats)
        tags = [self._tag(a) for a in per_row(adapter, len(chats))]
        prompts = [self.encode(chat, params.template) for chat in chats]
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
                    None if rows_choice is None else [rows_choice[i] for i in rows],
                )
                for i, generation in zip(rows, out, strict=True):
                    results[i] = generation
        except (RuntimeError, ValueError) as exc:
            raise PolicyError(f"hf backend ({self.model_id}) failed: {exc}") from exc
        return results  # type: ignore[return-value]

    def forget(self, keys: list[str]) -> None:
        self._prefixes.forget(keys)

    def _vocab(self, choices) -> Vocabulary | None:
        """Token texts for constrained decoding, built on first use."""
        if choices and self._vocabulary is None:
            self._vocabulary = Vocabulary(self.tokenizer, self.stop_ids)
        return self._vocabulary

    def close(self) -> None:
        self._prefixes.clear()
        self._merged = None
        self.model = self.base = None  # type: ignore[assignment]

    def encode(self, chat: Chat, template=NO_THINKING) -> list[int]:
        """Token ids of a chat rendered with the model's template, ready to answer
        (``template``: the chat-template options, ``SamplingParams.template``)."""
        return prompt_ids(self.tokenizer, chat, template)

    # --- adapters ----------------------------------------------------------

    def _tag(self, adapter: str | None) -> str | None:
        """The content digest of an adapter (None: the base model)."""
        if adapter is None:
            return None
        if not (Path(adapter) / "adapter_config.json").is_file():
            raise PolicyError(
                f"{adapter}: not a PEFT adapter folder (no adapter_config.json)"
            )
        digest = adapter_digest(adapter)
        self._paths[digest] = str(adapter)  # the latest folder with these weights
        return digest

    def _forward_for(self, tags: list[str | None]):
        """The model call for a batch whose original rows carry ``tags``."""
        if len(set(tags)) == 1 and tags[0] is not None and self.merge_lora:
            model, names = self._merged_model(tags[0]), None
        elif set(tags) == {None} and self.model is self.base:
            model, names = self.base, None
        else:
            model = self._peft(tags)
            names = [self._adapters[t] if t is not None else BASE for t in tags]
        device = self.device

        def forward(ids, mask, positions, cache, rows):
            extra = {} if names is None else {"adapter_names": [names[r] for r in rows]}
            out = model(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                position_ids=positions.to(device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=LAST_POSITION,  # the LM head only where it is read
                **extra,
            )
            return out.logits[:, -1, :]

        return forward

    def _peft(self, tags: list[str | None]):
        """The PeftModel with every adapter of ``tags`` loaded."""
        from peft import PeftModel

        for tag in dict.fromkeys(t for t in tags if t is not None):
            if tag in self._adapters:
                continue
            name = f"a{len(self._adapters)}"
            if self.model is self.base:
                self.model = PeftModel.from_pretrained(
                    self.base, self._paths[tag], adapter_name=name
                )
            else:
                self.model.load_adapter(self._paths[tag], adapter_name=name)
            self.model.eval()
            self._adapters[tag] = name
            log.info("loaded adapter %s as %s", self._paths[tag], name)
        return self.model

    def _merged_model(self, tag: str) -> torch.nn.Module:
        """A copy of the base with adapter ``tag`` folded in (one kept at a time)."""
        if self._merged is not None and self._merged[0] == tag:
            return self._merged[1]
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        self._merged = None
        if self.model is self.base:  # the base holds no LoRA layers: copy it
            fresh = copy.deepcopy(self.base)
        else:
            fresh = AutoModelForCausalLM.from_pretrained(
                self.path,
                dtype=self.dtype,
                attn_implementation=attention_implementation(),
            ).to(self.device)
        merged = PeftModel.from_pretrained(fresh, self._paths[tag]).merge_and_unload()
        merged.eval()
        self._merged = (tag, merged)
        log.info("merged adapter %s into a copy of the weights", self._paths[tag])
        return merged

    # --- decoding ----------------------------------------------------------

    @torch.inference_mode()
    def _decode(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        seeds: list[int],
        cache_keys: list[tuple[str, str | None] | None],
        tags: list[str | None],
        constraints=None,
    ) -> list[Generation]:
        matches = [
            self._prefixes.match(key, prompt)
            for key, prompt in zip(cache_keys, prompts, strict=True)
        ]
        forward = self._forward_for(tags)
        if self.share_prefix:
            self._share_openings(forward, prompts, matches, tags)

        def keep(row, tokens, cache, index, mask_row) -> None:
            if cache_keys[row] is None:
                return
            columns = mask_row.bool().to(self.device)
            known = int(columns.sum()) - len(prompts[row])
            ids = prompts[row] + tokens[:known]
            self._prefixes.keep(cache_keys[row], ids, cache, index, columns)

        out = decode(
            forward,
            prompts,
            matches,
            params,
            seeds,
            self.pad_id,
            self.stop_ids,
            keep,
            constraints,
        )
        return [
            self._generation(prompt, tokens, finish, logprobs, params)
            for prompt, tokens, finish, logprobs in zip(
                prompts, out.generated, out.finish, out.logprobs, strict=True
            )
        ]

    def _share_openings(self, forward, prompts, matches, tags) -> None:
        """Encode once the opening that rows without a cached history share."""
        fresh = [r for r, (n, _) in enumerate(matches) if n == 0]
        for rows, length in shared_prefixes(prompts, tags, fresh, SHARED_MINIMUM):
            ids = prompts[rows[0]][:length]
            cache = Cache(layer_class_to_replicate=lambda n=length: SlotLayer(n))
            forward(
                torch.tensor([ids]),
                torch.ones((1, length), dtype=torch.long),
                torch.arange(length)[None],
                cache,
                rows[:1],
            )
            opening = Prefix(
                ids, [(lay.keys[0], lay.values[0]) for lay in cache.layers]
            )
            for r in rows:
                matches[r] = (length, opening)

    def _generation(self, prompt, tokens, finish, logprobs, params) -> Generation:
        text_tokens = tokens[:-1] if finish == "stop" else tokens
        text, cut = truncate_reply(
            self.tokenizer.decode(text_tokens, skip_special_tokens=True),
            params.max_reply_bytes,
        )
        finish = "length" if cut else finish
        return Generation(text, len(prompt), len(tokens), finish, tokens, logprobs)


def _stop_ids(tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id}
    for token in ("<|im_end|>", "<|eot_id|>", "<|endoftext|>"):
        token_id = tokenizer.convert_tokens_to_ids(token)
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
            ids.add(token_id)
    return {i for i in ids if i is not None}

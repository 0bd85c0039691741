"""The policy interface: a batch of chats in, one completion per chat out.

Backends (``hf``, ``vllm``, ``openai``) differ in where the model runs; rollouts
and evaluation only see this interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evoflow.envs.formats import NO_THINKING
from evoflow.errors import EvoflowError

Chat = list[dict[str, str]]
# Rendering options for answering, unless the reply format says otherwise
# (``SamplingParams.template``): templates with a thinking switch (Qwen3) close
# an empty think block in the prompt; templates without one ignore the option.
ACTING_TEMPLATE_KWARGS = dict(NO_THINKING)
# One adapter for the whole batch, or one per chat; None is the base model.
Adapters = str | None | Sequence[str | None]
FINISH_REASONS = ("stop", "length", "context")
FRAMES = ("react", "text")  # reply formats whose action can be constrained


class PolicyError(EvoflowError):
    """The model backend failed to produce completions."""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one reply.

    ``temperature`` 0 means greedy. ``max_new_tokens`` and ``max_reply_bytes`` cap
    every reply; a reply cut by either ends with finish reason ``length``.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    max_reply_bytes: int = 8_192
    template: tuple[tuple[str, object], ...] = NO_THINKING  # chat-template kwargs

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass(frozen=True)
class ActionChoice:
    """Decode this row's action from ``actions`` in reply format ``form``, or
    from ``slots``: openings such as ``search[`` that free text on the same
    line follows, closed by ``]``."""

    actions: tuple[str, ...]
    form: str = "react"
    slots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.form not in FRAMES:
            raise EvoflowError(
                f"action-constrained decoding needs a reply format in which the "
                f"action is one line ({', '.join(FRAMES)}); got {self.form!r}"
            )
        if not (self.actions or self.slots) or not all(
            a.strip() for a in (*self.actions, *self.slots)
        ):
            raise EvoflowError("action-constrained decoding needs non-empty actions")
        bad = [s for s in self.slots if "]" in s or not s.isprintable()]
        if bad:
            raise EvoflowError(
                f"a slot's opening must be printable, without ']': {bad}"
            )


@dataclass(frozen=True)
class Generation:
    """One completion: text, token counts and why it ended.

    ``finish`` is ``stop`` (end of turn), ``length`` (cap reached) or ``context``
    (the prompt alone leaves no room in the context window; nothing generated).
    ``token_ids`` are the generated tokens (the stop token included) and
    ``logprobs`` the log-probability of each under the model's own distribution
    (log-softmax of the raw logits, whatever the sampling temperature) — what a
    teacher-forced forward pass of the same tokens gives; ``None`` where the
    backend does not report them.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish: str = "stop"
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


class Policy(ABC):
    """Generates replies for batches of chats.

    Attributes
    ----------
    model_id
        what produced the replies (recorded in every episode).
    max_context
        prompt + reply token budget per call.
    """

    model_id: str
    max_context: int

    @abstractmethod
    def generate(
        self,
        chats: list[Chat],
        params: SamplingParams,
        adapter: Adapters = None,
        seeds: list[int] | None = None,
        keys: list[str] | None = None,
        choices: Sequence[ActionChoice | None] | None = None,
    ) -> list[Generation]:
        """One completion per chat.

        Parameters
        ----------
        chats
            conversations as ``{"role", "content"}`` dicts, the last one a user turn.
        params
            sampling settings shared by the batch.
        adapter
            path of a PEFT LoRA folder to apply (None: the base model), or one
            such entry per chat — a batch may mix adapters.
        seeds
            one seed per chat; with the same seed a chat gets the same reply
            whatever else is in the batch.
        keys
            one stable id per chat (e.g. the episode id) so a backend can reuse
            work across calls whose chats extend earlier ones.
        choices
            one entry per chat: decode that chat's action from a list, or a
            slot's opening and free text (``ActionChoice``; None: free).
            Backends that cannot constrain decoding raise ``PolicyError`` when
            any entry is set.
        """

    def forget(self, keys: list[str]) -> None:  # noqa: B027 - optional hook
        """Drop any state kept for ``keys`` (their episodes ended)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""


def refuse_choices(backend: str, choices) -> None:
    """Fail clearly where a backend cannot constrain decoding to actions."""
    if choices and any(c is not None for c in choices):
        raise PolicyError(
            f"the {backend} backend cannot constrain decoding to listed actions "
            "(generation.constrain_actions); use the hf backend"
        )


def truncate_reply(text: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes; say whether it was cut."""
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= max_bytes:
        return text, False
    return raw[:max_bytes].decode("utf-8", errors="ignore"), True


def per_row(adapter: Adapters, rows: int) -> list[str | None]:
    """The adapter of each of ``rows`` chats."""
    if adapter is None or isinstance(adapter, str):
        return [adapter] * rows
    adapters = [None if a is None else str(a) for a in adapter]
    if len(adapters) != rows:
        raise ValueError(f"{len(adapters)} adapters for {rows} chats")
    return adapters


def prompt_ids(tokenizer, chat: Chat, template=NO_THINKING) -> list[int]:
    """Token ids of ``chat`` rendered to be answered (generation prompt), with
    the chat-template options ``template`` (``SamplingParams.template``)."""
    encoded = tokenizer.apply_chat_template(
        chat, add_generation_prompt=True, tokenize=True, **dict(template)
    )
    return list(encoded["input_ids"] if isinstance(encoded, Mapping) else encoded)

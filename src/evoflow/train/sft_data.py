"""Render episodes into token ids with labels on assistant turns only.

The chat is rendered once with the model's own template; the character spans of
trainable assistant turns (their text and the template's end-of-turn marker, not
the role header) are found by rendering growing prefixes of the chat, and a token
is labelled when it lies inside such a span. Whatever the template, the labelled
tokens decode to exactly the assistant texts plus end-of-turn markers.
"""

from __future__ import annotations

from dataclasses import dataclass

IGNORE = -100


@dataclass
class Example:
    input_ids: list[int]
    labels: list[int]
    cut_turns: int = 0

    @property
    def trained_tokens(self) -> int:
        return sum(label != IGNORE for label in self.labels)


def is_trained(message: dict) -> bool:
    """Assistant turns are learned unless explicitly flagged ``loss: False``."""
    return message["role"] == "assistant" and message.get("loss") is not False


def render(tokenizer, messages: list[dict], prompt: bool = False) -> str:
    chat = [{"role": m["role"], "content": m["content"]} for m in messages]
    return tokenizer.apply_chat_template(
        chat, tokenize=False, add_generation_prompt=prompt
    )


def trained_spans(tokenizer, messages: list[dict]) -> tuple[str, list[tuple[int, int]]]:
    """The rendered chat and the character spans to learn."""
    text = render(tokenizer, messages)
    spans = []
    for k, message in enumerate(messages):
        if not is_trained(message):
            continue
        header = render(tokenizer, messages[:k], prompt=True)
        upto = render(tokenizer, messages[: k + 1])
        if not (upto.startswith(header) and text.startswith(upto)):
            raise ValueError(
                "the chat template does not render conversations incrementally "
                f"(message {k}); assistant-only labels cannot be located"
            )
        spans.append((len(header), len(upto.rstrip())))
    return text, spans


def encode(tokenizer, messages: list[dict]) -> Example:
    """Token ids of the rendered chat, labelled inside trained spans."""
    text, spans = trained_spans(tokenizer, messages)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    labels = []
    for token, (start, end) in zip(
        encoded["input_ids"], encoded["offset_mapping"], strict=True
    ):
        inside = any(s <= start and end <= e for s, e in spans) and end > start
        labels.append(token if inside else IGNORE)
    return Example(list(encoded["input_ids"]), labels)


def encode_within(tokenizer, messages: list[dict], max_length: int) -> Example | None:
    """Encode; if too long, keep the opening and the latest whole turns that fit.

    The opening is everything up to the first assistant message (system prompt,
    task). Returns None when not even the opening plus one turn fits.
    """
    example = encode(tokenizer, messages)
    if len(example.input_ids) <= max_length:
        return example
    first = next(
        (i for i, m in enumerate(messages) if m["role"] == "assistant"), len(messages)
    )
    opening, rest = messages[:first], messages[first:]
    starts = [i for i, m in enumerate(rest) if m["role"] == "assistant"]
    for cut, start in enumerate(starts[1:], start=1):
        shorter = encode(tokenizer, opening + rest[start:])
        if len(shorter.input_ids) <= max_length:
            shorter.cut_turns = cut
            return shorter
    return None

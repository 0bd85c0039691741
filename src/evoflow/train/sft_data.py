"""Render episodes into token ids with labels on assistant turns only.

The chat is rendered once with the model's own template, as an agent sees it
when acting (``enable_thinking=False``), and a token is labelled when it lies
inside the character span of a trained assistant turn: its text and the
template's end-of-turn marker, not the role header. Each span is found from
renderings of the chat up to that turn: the text before the turn, the
generation prompt, and the turn rendered as the chat's last message. Qwen3's
template renders an empty ``<think>`` block only into the last assistant turn
(and into the generation prompt), so the turn's text and marker are looked up
after the header in the full rendering rather than assumed to start where the
generation prompt ends; the think block itself is never labelled. Whatever the
template, the labelled tokens decode to exactly the assistant texts plus
end-of-turn markers. A turn flagged ``actions_only`` is learned from its
one ``Action:`` tag on (its thought is context, not a target); one without the
tag, or with more than one (a reply the ReAct parser refuses), is not learned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from evoflow.envs.formats import ACTION_TAG

IGNORE = -100
log = logging.getLogger(__name__)


@dataclass
class Example:
    input_ids: list[int]
    labels: list[int]
    cut_turns: int = 0
    explored: bool = False  # found by the client's own exploration

    @property
    def trained_tokens(self) -> int:
        return sum(label != IGNORE for label in self.labels)


def is_trained(message: dict) -> bool:
    """Assistant turns are learned unless explicitly flagged ``loss: False``."""
    return message["role"] == "assistant" and message.get("loss") is not False


def render(tokenizer, messages: list[dict], prompt: bool = False) -> str:
    """The chat as the template writes it (thinking off, for templates that ask)."""
    chat = [{"role": m["role"], "content": m["content"]} for m in messages]
    return tokenizer.apply_chat_template(
        chat, tokenize=False, add_generation_prompt=prompt, enable_thinking=False
    )


def trained_spans(tokenizer, messages: list[dict]) -> tuple[str, list[tuple[int, int]]]:
    """The rendered chat and the character spans to learn."""
    text = render(tokenizer, messages)
    spans = []
    for k, message in enumerate(messages):
        if not is_trained(message):
            continue
        start, end = _turn_span(tokenizer, messages, k, text)
        if message.get("actions_only"):
            start = _action_start(text, start, end)
            if start is None:
                continue
        spans.append((start, end))
    return text, spans


def _action_start(text: str, start: int, end: int) -> int | None:
    """Where the reply's one ``Action:`` tag starts, the blanks before it
    included (tokenizers fold a space into the word after it); None when the
    reply has no tag or more than one, as the ReAct parser reads it."""
    tags = list(ACTION_TAG.finditer(text, start, end))
    if len(tags) != 1:
        return None
    at = tags[0].start()
    while at > start and text[at - 1] in " \t":
        at -= 1
    return at


def _turn_span(tokenizer, messages: list[dict], k: int, text: str) -> tuple[int, int]:
    """Where assistant turn ``k`` (text + end-of-turn marker) lies in ``text``."""
    before = render(tokenizer, messages[:k]) if k else ""
    header = render(tokenizer, messages[:k], prompt=True)
    upto = render(tokenizer, messages[: k + 1])
    if not (
        text.startswith(before)
        and header.startswith(before)
        and upto.startswith(header)
    ):
        raise ValueError(
            "the chat template does not render conversations incrementally "
            f"(message {k}); assistant-only labels cannot be located"
        )
    turn = upto[len(header) :].rstrip()
    start = text.find(turn, len(before))
    # Between the earlier messages and the turn only (part of) its header may lie.
    if start < 0 or not header[len(before) :].startswith(text[len(before) : start]):
        raise ValueError(
            f"the chat template renders assistant message {k} differently inside "
            "the conversation than at its end; its labels cannot be located"
        )
    return start, start + len(turn)


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

    The opening runs up to the user message that the first trained reply answers
    (system prompt and task; for AgentTraj chats also the instruction and its
    acknowledgement). The kept turns start at a user (observation) message, so
    every kept reply still follows the observation it answers. A template that
    insists on alternating roles gets the task and the first kept observation
    joined into one user message. Returns None when not even the opening plus
    one observation and its reply fit (or nothing is trained).
    """
    example = encode(tokenizer, messages)
    if len(example.input_ids) <= max_length:
        return example
    opening_end = _opening_end(messages)
    if opening_end is None:
        return None
    opening, rest = messages[:opening_end], messages[opening_end:]
    last = max(i for i, m in enumerate(rest) if is_trained(m))
    starts = [i for i in range(1, last) if rest[i]["role"] == "user"]
    # Dropping more turns never lengthens the chat: find the first cut that fits.
    low, high, best = 0, len(starts), None
    while low < high:
        middle = (low + high) // 2
        shorter = _encode_cut(tokenizer, opening, rest[starts[middle] :])
        if len(shorter.input_ids) <= max_length:
            best, high = (middle, shorter), middle
        else:
            low = middle + 1
    if best is None:
        return None
    dropped = rest[: starts[best[0]]]
    best[1].cut_turns = sum(m["role"] == "assistant" for m in dropped)
    return best[1]


def _opening_end(messages: list[dict]) -> int | None:
    """Index just past the user message that the first trained reply answers."""
    first = next((i for i, m in enumerate(messages) if is_trained(m)), None)
    if first is None:
        return None
    users = [i for i in range(first) if messages[i]["role"] == "user"]
    return users[-1] + 1 if users else first


def _encode_cut(tokenizer, opening: list[dict], kept: list[dict]) -> Example:
    """Encode opening + kept turns (two user messages in a row where allowed)."""
    from jinja2 import TemplateError

    try:
        return encode(tokenizer, opening + kept)
    except TemplateError:  # e.g. Llama-2's template: roles must alternate
        if not (opening and opening[-1]["role"] == kept[0]["role"] == "user"):
            raise
        task = opening[-1]
        joined = {**task, "content": f"{task['content']}\n\n{kept[0]['content']}"}
        return encode(tokenizer, [*opening[:-1], joined, *kept[1:]])


def encode_all(
    tokenizer, chats, max_length: int, explored_thoughts: bool = True
) -> tuple[list[Example], int, int]:
    """``chats``: (chat, explored) pairs; each kept example carries its flag.
    Without ``explored_thoughts`` an explored chat's replies are learned from
    their Action tag on; replies without one tag teach nothing."""
    examples, cut, dropped, untagged = [], 0, 0, 0
    for chat, explored in chats:
        actions_only = explored and not explored_thoughts
        if actions_only:
            chat = [{**m, "actions_only": True} for m in chat]
        example = encode_within(tokenizer, chat, max_length)
        if example is None:
            dropped += 1
        elif example.trained_tokens:
            cut += example.cut_turns > 0
            examples.append(replace(_trim(example), explored=explored))
        else:
            untagged += actions_only
    if untagged:
        log.warning(
            "train: %d explored episodes are not trained: explored_thoughts is "
            "off and none of their replies has one 'Action:' tag",
            untagged,
        )
    return examples, cut, dropped


def _trim(example: Example) -> Example:
    """Drop the tokens after the last labelled one: nothing learns from them."""
    last = max(i for i, label in enumerate(example.labels) if label != IGNORE)
    return Example(
        example.input_ids[: last + 1], example.labels[: last + 1], example.cut_turns
    )

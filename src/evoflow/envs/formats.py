"""Reply formats: how an agent is told to answer, and how its reply is read.

A format has the instructions that close every system prompt, ``parse`` (the
action of a reply, or why there is none — never an exception), ``render`` (a
reply in the format, for expert demonstrations), the hint that closes the
observation of an unusable reply, and the chat-template options its prompts are
rendered with (``chat_template``; both formats turn Qwen3's thinking off). An
env names its format (``TextEnv.reply_format``); a rollout may override it
(``RolloutSpec.reply_format``).

``react`` — a ``Thought:`` line and one single-line ``Action:`` (every env today).
``code`` — a short plan, then one fenced code block whose whole body is the
action (multi-line; for agents that write programs).
``text`` — the whole reply is the action, read by the env (short-answer games
such as ``doors``); a reply cut at the length limit is still read
(``needs_whole_reply`` is False).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ACTION_CHARS = 512


@dataclass(frozen=True)
class ParsedReply:
    """The action of a reply, or why there is none."""

    action: str | None
    problem: str | None = None


# Chat-template keyword arguments when acting: templates with a thinking switch
# (Qwen3) close an empty think block; templates without one ignore the option.
NO_THINKING = (("enable_thinking", False),)


@dataclass(frozen=True)
class ReplyFormat:
    name: str
    instructions: str
    retry_hint: str  # closes the observation of an unusable reply
    chat_template: tuple[tuple[str, object], ...] = NO_THINKING  # template kwargs
    needs_whole_reply: bool = True  # a reply cut at the length limit is unusable

    def parse(self, text: str) -> ParsedReply:
        raise NotImplementedError

    def render(self, thought: str, action: str) -> str:
        raise NotImplementedError


ACTION_TAG = re.compile(r"Action\s*:", re.IGNORECASE)


class ReAct(ReplyFormat):
    def parse(self, text: str) -> ParsedReply:
        """The first line of text after the single ``Action:``."""
        tags = list(ACTION_TAG.finditer(text))
        if not tags:
            return ParsedReply(None, "no 'Action:' line")
        if len(tags) > 1:
            return ParsedReply(None, "more than one 'Action:' line")
        rest = text[tags[0].end() :].strip()
        action = rest.splitlines()[0].strip() if rest else ""
        if not action:
            return ParsedReply(None, "the action after 'Action:' is empty")
        if len(action) > MAX_ACTION_CHARS or not action.isprintable():
            return ParsedReply(
                None, "the action is too long or contains control characters"
            )
        return ParsedReply(action)

    def render(self, thought: str, action: str) -> str:
        return f"Thought: {thought}\nAction: {action}"


FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*?)```", re.DOTALL)
MAX_CODE_CHARS = 64_000


class FencedCode(ReplyFormat):
    def parse(self, text: str) -> ParsedReply:
        """The body of the single fenced code block."""
        blocks = FENCE.findall(text)
        if not blocks:
            return ParsedReply(None, "no fenced code block")
        if len(blocks) > 1:
            return ParsedReply(None, "more than one fenced code block")
        body = blocks[0].strip("\n")
        if not body.strip():
            return ParsedReply(None, "the code block is empty")
        if len(body) > MAX_CODE_CHARS:
            return ParsedReply(None, "the code block is too long")
        return ParsedReply(body)

    def render(self, thought: str, action: str) -> str:
        return f"{thought}\n```python\n{action}\n```"


class WholeReply(ReplyFormat):
    def parse(self, text: str) -> ParsedReply:
        """The reply itself, stripped; the env decides what it means."""
        action = text.strip()
        if not action:
            return ParsedReply(None, "the reply is empty")
        if len(action) > MAX_ACTION_CHARS:
            return ParsedReply(None, "the reply is too long")
        return ParsedReply(action)

    def render(self, thought: str, action: str) -> str:
        return action


REPLY_FORMATS: dict[str, ReplyFormat] = {
    f.name: f
    for f in (
        ReAct(
            "react",
            "Reply to every observation with exactly two lines. The first line "
            "starts with 'Thought:' and explains your next move in one short "
            "sentence. The second line starts with 'Action:' and contains exactly "
            "one action, written as described above and nothing else.",
            "Reply with a 'Thought:' line and one 'Action:' line.",
        ),
        FencedCode(
            "code",
            "Reply to every observation with one or two sentences on what you will "
            "do, followed by exactly one fenced code block (```python ... ```) "
            "holding the complete code; nothing after the block.",
            "Reply with a short plan and exactly one fenced code block.",
        ),
        WholeReply(
            "text",
            "Reply with your answer in a few words.",
            "Reply with a short answer.",
            needs_whole_reply=False,
        ),
    )
}


def reply_format(name: str) -> ReplyFormat:
    """The registered format ``name``, or ``ValueError`` listing the known ones."""
    if name not in REPLY_FORMATS:
        raise ValueError(
            f"reply format {name!r} is not one of {', '.join(REPLY_FORMATS)}"
        )
    return REPLY_FORMATS[name]

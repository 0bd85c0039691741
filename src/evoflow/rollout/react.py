"""The ReAct reply format: one thought, one action, and how replies are parsed.

Every episode — expert demonstration, exploration, evaluation — is the same chat:
system (the env's rules + reply format), user (task and first observation), then
alternating assistant replies ``Thought: …\\nAction: …`` and user observations.
Demonstrations and rollouts share this module so training sees exactly what
inference produces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evoflow.store.schema import Message

ACTION_TAG = re.compile(r"Action\s*:", re.IGNORECASE)
MAX_ACTION_CHARS = 512


@dataclass(frozen=True)
class ParsedReply:
    """The action of a reply, or why there is none."""

    action: str | None
    problem: str | None = None


def format_reply(thought: str, action: str) -> str:
    """An assistant reply in the layout every system prompt asks for."""
    return f"Thought: {thought}\nAction: {action}"


def parse_reply(text: str) -> ParsedReply:
    """Extract the action: the first line of text after the single ``Action:``.

    Missing, empty, repeated or overlong actions are problems, never exceptions.
    """
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


def opening_messages(system_prompt: str, first_observation: str) -> list[Message]:
    """System prompt and the first user turn (the task and what the agent sees)."""
    return [
        Message("system", system_prompt, False),
        Message("user", first_observation, False),
    ]


def turn_messages(
    reply: str, observation: str | None, **generated: Any
) -> list[Message]:
    """An assistant reply (trained on) and, unless the episode ended, the next
    observation. ``generated``: the reply's ``token_ids``/``logprobs`` and the
    ``reward``/``valid`` of its action, where known (schema v2 message fields)."""
    messages = [Message("assistant", reply, True, **generated)]
    if observation is not None:
        messages.append(Message("user", observation, False))
    return messages

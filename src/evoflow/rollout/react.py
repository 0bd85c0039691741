"""Episode chats: opening and turn messages, and the default (ReAct) replies.

Reply formats themselves live in ``evoflow.envs.formats``. Every episode — expert demonstration, exploration, evaluation — is the same chat:
system (the env's rules + reply format), user (task and first observation), then
alternating assistant replies ``Thought: …\\nAction: …`` and user observations.
Demonstrations and rollouts share this module so training sees exactly what
inference produces.
"""

from __future__ import annotations

from typing import Any

from evoflow.envs.formats import ParsedReply, reply_format
from evoflow.store.schema import Message

REACT = reply_format("react")


def format_reply(thought: str, action: str) -> str:
    """An assistant reply in the ReAct layout (the default format)."""
    return REACT.render(thought, action)


def parse_reply(text: str) -> ParsedReply:
    """The action of a ReAct reply (see ``evoflow.envs.formats.ReAct``)."""
    return REACT.parse(text)


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

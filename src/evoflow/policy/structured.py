"""Action constraints as one regular expression per reply, for engines that
constrain decoding by pattern (the ``vllm`` backend's structured outputs).

The ``hf`` backend follows a token trie (``evoflow.policy.constrain``); an
engine that takes a pattern gets the same contract in the pattern's terms:

- ``react``: an optional first line of free text, then ``Action: `` and one of
  the listed actions (or a slot). The first line may open with ``Thought:`` but
  holds no other ``:``, so a matching reply has exactly one ``Action:`` tag, as
  the ReAct parser requires; after its opening it is at most ``thought_chars``
  characters long, so the action can still fit in the token budget (the caller
  sizes it, and decodes again with a smaller size where it did not fit).
- ``text``: the whole reply is one listed action or a slot.

A slot (``ActionChoice.slots``, e.g. WebShop's ``search[``) is its opening,
then one line of printable text that begins with a visible character and
holds no ``:`` or ``]``, at most ``SLOT_MAX_CHARS`` long, closed by ``]`` —
what the trie allows. The reply ends where the pattern does: nothing may
follow the action.

Where the two differ: the trie lets the thought hold any character and ends
it when the token budget says so; the pattern forbids ``:`` in it and ends it
by length in characters, which a caller converts from tokens.
"""

from __future__ import annotations

import re

from evoflow.policy.base import ActionChoice
from evoflow.policy.constrain import SLOT_MAX_CHARS

THOUGHT_OPENING = "Thought:"
ACTION_OPENING = "Action: "
# Printable text of one line without ':' (the control characters are \x00-\x1f
# and \x7f; the first character of a slot's text is not a space either).
_LINE = r"[^:\x00-\x1f\x7f]"
_SLOT_FIRST = r"[^:\]\x00-\x20\x7f]"
_SLOT_REST = r"[^:\]\x00-\x1f\x7f]"
_SPECIAL = re.compile(r"([\\.^$*+?{}\[\]|()])")  # what a pattern must escape


def action_pattern(choice: ActionChoice, thought_chars: int) -> str:
    """The pattern a whole reply must match to be decoded as ``choice`` says
    (``thought_chars``: the longest first line of a ReAct reply)."""
    if thought_chars < 0:
        raise ValueError(f"thought_chars must be >= 0, got {thought_chars}")
    options = [_literal(a) for a in choice.actions]
    options += [
        f"{_literal(s)}{_SLOT_FIRST}{_SLOT_REST}{{0,{SLOT_MAX_CHARS - 1}}}\\]"
        for s in choice.slots
    ]
    action = "(?:" + "|".join(options) + ")"
    if choice.form == "text":
        return action
    thought = f"(?:{_literal(THOUGHT_OPENING)})?{_LINE}{{0,{thought_chars}}}\\n"
    return f"(?:{thought})?{_literal(ACTION_OPENING)}{action}"


def _literal(text: str) -> str:
    """``text`` as a pattern that matches it alone: only the pattern's own
    special characters escaped (``re.escape`` also escapes spaces and
    punctuation, which some pattern engines, such as xgrammar's, warn about)."""
    return _SPECIAL.sub(r"\\\1", text)

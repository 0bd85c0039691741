"""Action constraints as patterns (``evoflow.policy.structured``), checked on
replies worked by hand and against the ReAct parser every rollout uses."""

from __future__ import annotations

import re

import pytest

from evoflow.envs.formats import reply_format
from evoflow.policy.base import ActionChoice
from evoflow.policy.constrain import SLOT_MAX_CHARS
from evoflow.policy.structured import action_pattern

REACT = ActionChoice(("go forward", "turn left", "pick up the key [2]"),
                     slots=("search[",))  # fmt: skip


def matches(choice: ActionChoice, reply: str, thought_chars: int = 60) -> bool:
    return re.fullmatch(action_pattern(choice, thought_chars), reply) is not None


@pytest.mark.parametrize("reply", [
    "Thought: the key is ahead.\nAction: go forward",
    "I turn first\nAction: turn left",
    "Action: pick up the key [2]",  # no thought line at all
    "Thought:\nAction: go forward",
    "Thought: look it up\nAction: search[red shoes, size 9]",
])  # fmt: skip
def test_a_react_reply_with_one_listed_action_matches(reply):
    assert matches(REACT, reply)
    parsed = reply_format("react").parse(reply)
    assert parsed.action in REACT.actions or parsed.action.startswith("search[")


@pytest.mark.parametrize("reply", [
    "Thought: x\nAction: go backward",  # not listed
    "Thought: x\nAction: go forward\n",  # something after the action
    "Thought: x\nAction: go forwardly",
    "Thought: Action: turn left\nAction: go forward",  # a second tag in the thought
    "Thought: note: careful\nAction: go forward",  # ':' in the thought
    "Thought: x\nmore\nAction: go forward",  # two lines of thought
    "Thought: x\nAction: search[]",  # an empty slot
    "Thought: x\nAction: search[ shoes]",  # a slot opening with a blank
    "Thought: x\nAction: search[a]b]",
    "Thought: x\nAction: search[a: b]",
    "Thought: x\nAction: search[shoes",  # never closed
    "go forward",  # a react reply needs its tag
])  # fmt: skip
def test_a_react_reply_that_breaks_the_contract_does_not_match(reply):
    assert not matches(REACT, reply)


def test_the_thought_and_the_slot_are_capped_in_characters():
    assert matches(REACT, "a" * 10 + "\nAction: go forward", thought_chars=10)
    assert not matches(REACT, "a" * 11 + "\nAction: go forward", thought_chars=10)
    longest = "Action: search[" + "b" * SLOT_MAX_CHARS + "]"
    assert matches(REACT, longest) and not matches(REACT, longest[:-1] + "b]")
    with pytest.raises(ValueError, match="thought_chars"):
        action_pattern(REACT, -1)


def test_a_text_reply_is_the_action_alone_and_special_characters_are_literal():
    text = ActionChoice(("crane", "a.b (c)", "x-y #1 & ~z / w+"), form="text")
    assert matches(text, "crane") and matches(text, "a.b (c)")
    assert matches(text, "x-y #1 & ~z / w+") and not matches(text, "x-y #1 & ~z / ww")
    assert not matches(text, "axb (c)")  # '.' is not a wildcard
    assert not matches(text, "Action: crane") and not matches(text, "crane ")

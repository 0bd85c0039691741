from __future__ import annotations

import pytest

from evoflow.rollout.react import format_reply, parse_reply


@pytest.mark.parametrize(
    "text, action",
    [
        ("Thought: go.\nAction: move up", "move up"),
        ("Thought: go.\nAction:move up  ", "move up"),
        ("Thought: go.\naction: MOVE UP", "MOVE UP"),
        ("Thought:\nfine\n\nAction:\nclick[buy now]\n", "click[buy now]"),
        ("Action: get 1 oak log\nObservation: Got 1 oak log", "get 1 oak log"),
        (format_reply("x", "s h i r e"), "s h i r e"),
    ],
)
def test_actions_are_the_first_line_after_the_tag(text, action):
    assert parse_reply(text).action == action


@pytest.mark.parametrize(
    "text, problem",
    [
        ("I will move up.", "no 'Action:' line"),
        ("", "no 'Action:' line"),
        ("Thought: hmm\nAction:", "empty"),
        ("Thought: hmm\nAction:   \n\n", "empty"),
        ("Action: move up\nAction: move down", "more than one"),
        ("Action: " + "x" * 600, "too long"),
        ("Action: move\x00up", "control characters"),
        ("Action: " + "\udcff" * 3, "control characters"),
    ],
)
def test_unusable_replies_name_the_problem(text, problem):
    parsed = parse_reply(text)
    assert parsed.action is None and problem in parsed.problem


def test_garbage_never_raises():
    blob = bytes(range(256)).decode("latin-1") * 400  # ~100 KB of binary-looking text
    assert parse_reply(blob).action is None or isinstance(parse_reply(blob).action, str)

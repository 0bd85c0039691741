"""Reply formats: parsing by hand-worked replies, and a rollout in the code format."""

from __future__ import annotations

import pytest

from evoflow.envs.formats import REPLY_FORMATS, reply_format
from evoflow.envs.wordle import WordleEnv
from evoflow.policy.base import Generation, Policy
from evoflow.rollout.engine import RolloutSpec, rollout

CODE = reply_format("code")
REACT = reply_format("react")


@pytest.mark.parametrize(
    ("text", "action", "problem"),
    [
        ("Thought: go.\nAction: move up", "move up", None),
        ("thought: x\naction :  move up  \nmore", "move up", None),
        ("Thought: x", None, "no 'Action:' line"),
        ("Action: a\nAction: b", None, "more than one 'Action:' line"),
        ("Thought: x\nAction:   ", None, "the action after 'Action:' is empty"),
    ],
)
def test_react_reads_one_action_line(text, action, problem):
    parsed = REACT.parse(text)
    assert (parsed.action, parsed.problem) == (action, problem)


@pytest.mark.parametrize(
    ("text", "action", "problem"),
    [
        ("Plan: print it.\n```python\nx = 1\nprint(x)\n```", "x = 1\nprint(x)", None),
        (
            "```\nfor i in range(3):\n    pass\n```\n",
            "for i in range(3):\n    pass",
            None,
        ),
        ("no code here", None, "no fenced code block"),
        (
            "```python\na\n```\n```python\nb\n```",
            None,
            "more than one fenced code block",
        ),
        ("```python\n  \n```", None, "the code block is empty"),
    ],
)
def test_code_reads_one_fenced_block(text, action, problem):
    parsed = CODE.parse(text)
    assert (parsed.action, parsed.problem) == (action, problem)


@pytest.mark.parametrize(
    ("text", "action", "problem"),
    [
        ("  The left one, I think.\n", "The left one, I think.", None),
        (" \n\n ", None, "the reply is empty"),
    ],
)
def test_text_takes_the_whole_reply_and_keeps_a_cut_one(text, action, problem):
    fmt = reply_format("text")
    parsed = fmt.parse(text)
    assert (parsed.action, parsed.problem) == (action, problem)
    assert not fmt.needs_whole_reply and reply_format("react").needs_whole_reply


@pytest.mark.parametrize("name", sorted(REPLY_FORMATS))
def test_a_rendered_reply_parses_back_to_its_action(name):
    fmt = reply_format(name)
    action = "guess crane" if name == "react" else "import math\nprint(math.pi)"
    assert fmt.parse(fmt.render("Because.", action)).action == action


def test_unknown_format_is_named():
    with pytest.raises(ValueError, match="'yaml' is not one of react, code, text"):
        RolloutSpec("e", "m", "test", "eval", reply_format="yaml")


class Scripted(Policy):
    """Replies from a list (orchestration test double)."""

    model_id = "scripted"
    max_context = 10_000

    def __init__(self, replies):
        self.replies = list(replies)

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        return [Generation(self.replies.pop(0), 1, 1) for _ in chats]


def test_a_rollout_reads_actions_in_the_spec_format():
    # Prepare: a Wordle task and the expert's first guess, once as ReAct, once fenced
    env = WordleEnv()
    task = env.task_ids("test")[0]
    env.reset(task)
    guess = env.expert_action()[1]
    replies = [f"Thought: x\nAction: {guess}", f"My guess.\n```\n{guess}\n```"]
    spec = RolloutSpec("e", "m", "test", "eval", horizon=2, reply_format="code")

    # Execute
    [episode] = rollout(Scripted(replies), WordleEnv, [task], spec, progress=False)

    # Assert: in the code format the ReAct reply is unusable, the fenced one is played
    turns = [m for m in episode.messages if m.role == "assistant"]
    assert [m.valid for m in turns] == [False, True]
    assert episode.n_invalid == 1 and episode.n_turns == 2
    assert "no fenced code block" in episode.messages[3].content
    assert "exactly one fenced code block" in episode.messages[3].content
    assert episode.messages[0].content == env.prompt_for("code")
    assert "fenced code block" in episode.messages[0].content

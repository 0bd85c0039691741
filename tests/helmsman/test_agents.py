"""Reading the agents' replies: fenced code in the shapes models write it."""

from __future__ import annotations

import pytest

from evoflow.helmsman.agents import (
    ReplyError,
    fenced,
    parse_blueprint,
    parse_module,
    parse_patch,
    parse_reflection,
)


@pytest.mark.parametrize(
    "opening", ["```python task.py", "```task.py", "```python:task.py", '```python title="task.py"',
                "```py src/app/task.py"],
)  # fmt: skip
def test_a_file_name_on_the_fence_line_names_the_block(opening):
    assert parse_patch(f"Fixed:\n{opening}\nx = 1\n```\n") == {"task.py": "x = 1\n"}


def test_a_first_line_header_names_the_block_and_is_dropped():
    reply = "```python\r\n# File: `run.py`\r\nimport json\r\n```\r\n"
    assert parse_patch(reply) == {"run.py": "import json\n"}


def test_an_unreadable_fence_does_not_shift_the_blocks_after_it():
    reply = "```\nnotes\n```\n```python\n# file: run.py\nmain()\n```\n"
    assert fenced(reply) == [(None, "notes\n"), ("run.py", "main()\n")]
    assert parse_patch(reply) == {"run.py": "main()\n"}


def test_a_patch_of_unknown_files_only_is_refused_with_their_names():
    with pytest.raises(ReplyError, match="utils.py"):
        parse_patch("```python\n# file: utils.py\nx = 1\n```")
    with pytest.raises(ReplyError, match="no module"):
        parse_patch("Change the learning rate.")


def test_a_module_reply_is_its_last_block():
    assert parse_module("```\na\n```\ntext\n```python\nb = 2\n```") == "b = 2\n"
    with pytest.raises(ReplyError, match="no fenced code block"):
        parse_module("")


def test_reflections_and_blueprints():
    assert parse_reflection("**INCOMPLETE**: no metric\n- metric") == (
        False,
        "no metric\n- metric",
    )
    assert parse_reflection("COMPLETE") == (True, "")
    with pytest.raises(ReplyError):
        parse_reflection("Looks fine to me.")
    with pytest.raises(ReplyError, match="no spec for run.py"):
        parse_blueprint('{"task.py": "a", "strategy.py": "b", "client_app.py": "c", '
                        '"server_app.py": "d"}')  # fmt: skip

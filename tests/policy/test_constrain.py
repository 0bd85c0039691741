"""Action-constrained decoding: worked by hand on a toy vocabulary, then on a model."""

from __future__ import annotations

import pytest

from evoflow.envs.formats import reply_format
from evoflow.errors import EvoflowError
from evoflow.policy.base import ActionChoice, SamplingParams
from evoflow.policy.constrain import RowConstraint, Vocabulary

# A toy tokenizer: id 0 ends the turn; texts are spelled by longest match.
TOKENS = ["<end>", "A", "c", "t", "i", "o", "n", ":", " ", "Action", "Action:",
          " go", " left", " right", "\n", "x", "g", "l", "e", "f", "r", "h", " g", ": g"]  # fmt: skip
STOP, ACTION_TAG, NEWLINE, X = 0, 10, 14, 15


class ToyTokenizer:
    all_special_ids = [STOP]

    def __len__(self) -> int:
        return len(TOKENS)

    def batch_decode(self, rows):
        return [TOKENS[row[0]] for row in rows]

    def __call__(self, text, add_special_tokens=False):
        ids = []
        while text:
            best = max(
                (i for i, t in enumerate(TOKENS) if i and text.startswith(t)),
                key=lambda i: len(TOKENS[i]),
            )
            ids.append(best)
            text = text[len(TOKENS[best]) :]
        return {"input_ids": ids}


@pytest.fixture
def vocab() -> Vocabulary:
    return Vocabulary(ToyTokenizer(), {STOP})


def row(vocab, form="react") -> RowConstraint:
    return RowConstraint(vocab, ActionChoice(("go left", "go right"), form))


def test_the_thought_is_free_but_cannot_end_the_turn(vocab):
    state = row(vocab)
    state.advance(X)
    assert state.allowed(steps_left=20) == ("ban", [STOP])


def test_the_end_of_the_first_line_forces_the_tag_then_the_actions(vocab):
    # "x\n" ends the thought: "Action: go left|right" follows in its own spelling,
    # "Action:" " go" " left|right"
    state = row(vocab)
    for token in (X, NEWLINE):
        state.advance(token)
    assert state.allowed(20) == ("only", [ACTION_TAG])
    state.advance(ACTION_TAG)
    assert state.allowed(20) == ("only", [11])
    state.advance(11)
    assert state.allowed(20) == ("only", [12, 13])
    state.advance(12)
    assert state.allowed(20) == ("only", [STOP])


def test_a_tag_written_in_the_thought_is_followed_by_an_action(vocab):
    state = row(vocab)
    for token in (X, 9, 7):  # "x" "Action" ":"
        state.advance(token)
    assert state.allowed(20) == ("only", [11])  # " go" — " go left" spelled
    state.advance(11)
    assert state.allowed(20) == ("only", [12, 13])
    state.advance(13)
    assert state.allowed(20) == ("only", [STOP])


def test_a_thought_too_long_for_the_action_is_cut_off_with_a_newline(vocab):
    state = row(vocab)
    state.advance(X)
    assert state.reserve == 4 + 1 + 2  # "\n" "Action:" " go" " right", stop, margin
    assert state.allowed(state.reserve + 1) == ("ban", [STOP])
    assert state.allowed(state.reserve) == ("only", [NEWLINE])


def test_a_tag_token_that_starts_the_action_is_followed_letter_by_letter(vocab):
    # "Action" then ": g" — the action began inside a token: texts, not spellings
    state = row(vocab)
    for token in (X, 9, 23):
        state.advance(token)
    kind, ids = state.allowed(20)
    assert kind == "only" and set(ids) == {5}  # only "o" continues " go ..."


def test_free_text_that_leaves_every_action_is_given_up(vocab):
    state = row(vocab)
    for token in (X, 9, 7, X):  # "Action:x" — no action starts with "x"
        state.advance(token)
    assert state.lost and state.allowed(20) == ("ban", [])


def test_text_replies_are_constrained_from_the_first_token(vocab):
    state = row(vocab, form="text")
    assert state.allowed(20) == ("only", [16])  # "go left" spelled "g" "o" " " ...


def test_a_code_format_or_empty_list_cannot_be_constrained():
    with pytest.raises(EvoflowError, match="one line"):
        ActionChoice(("x",), "code")
    with pytest.raises(EvoflowError, match="non-empty"):
        ActionChoice((), "react")


MAZE = ("move up", "move down", "move left", "move right")


def chat() -> list[dict]:
    return [
        {"role": "system", "content": "Find the exit."},
        {"role": "user", "content": "You are in a maze. Where do you go?"},
    ]


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_every_constrained_reply_reads_as_a_listed_action(tiny, temperature):
    # Execute: the random model writes noise; under the constraint its action is listed
    params = SamplingParams(temperature=temperature, max_new_tokens=24)
    seeds = list(range(12))
    free = tiny.generate([chat()] * 12, params, seeds=seeds)
    held = tiny.generate(
        [chat()] * 12, params, seeds=seeds, choices=[ActionChoice(MAZE)] * 12
    )

    # Assert: every constrained reply parses to one of the moves and ends the turn
    react = reply_format("react")
    assert all(react.parse(g.text).action in MAZE for g in held), [g.text for g in held]
    assert all(g.finish == "stop" for g in held)
    assert sum(react.parse(g.text).action in MAZE for g in free) < 6


def test_a_constrained_row_decodes_alone_as_in_a_mixed_batch(tiny):
    params = SamplingParams(temperature=1.0, max_new_tokens=24)
    alone = tiny.generate([chat()], params, seeds=[5], choices=[ActionChoice(MAZE)])
    mixed = tiny.generate(
        [chat(), chat()], params, seeds=[7, 5], choices=[None, ActionChoice(MAZE)]
    )
    assert mixed[1].text == alone[0].text

"""Action-constrained decoding: worked by hand on a toy vocabulary, then on a model."""

from __future__ import annotations

import pytest

from evoflow.envs.formats import reply_format
from evoflow.errors import EvoflowError
from evoflow.policy.base import ActionChoice, SamplingParams
from evoflow.policy.constrain import SLOT_MAX_CHARS, RowConstraint, Vocabulary

# A toy tokenizer: id 0 ends the turn; texts are spelled by longest match.
TOKENS = ["<end>", "A", "c", "t", "i", "o", "n", ":", " ", "Action", "Action:",
          " go", " left", " right", "\n", "x", "g", "l", "e", "f", "r", "h", " g", ": g",
          "search[", "eco", "]", "x]", "]x", ": se", "arch[", "\t", " ]"]  # fmt: skip
STOP, ACTION_TAG, NEWLINE, X = 0, 10, 14, 15
SPACE, SEARCH, ECO, CLOSE, X_CLOSE, CLOSE_X, TAG_SE, ARCH = 8, *range(24, 30), 30
TAB, SPACE_CLOSE = 31, 32
# never inside a query: stop, newline, tab, "]" inside a token, ":" (a second tag)
SLOT_BANNED = [STOP, 7, 10, NEWLINE, 23, CLOSE_X, TAG_SE, TAB]


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


def slot_row(vocab, actions=(), form="react") -> RowConstraint:
    return RowConstraint(vocab, ActionChoice(actions, form, ("search[",)))


def test_a_slot_is_opened_then_free_on_one_line_then_closed_and_ended(vocab):
    # "x" "Action" ":" then " " "search[" as spelled; the query is free but may
    # not hold a newline or a "]" inside a token ("]x"), nor close while empty
    state = slot_row(vocab)
    for token in (X, 9, 7):
        state.advance(token)
    assert state.allowed(20) == ("only", [SPACE])
    state.advance(SPACE)
    assert state.allowed(20) == ("only", [SEARCH])
    state.advance(SEARCH)
    first = sorted({*SLOT_BANNED, CLOSE, X_CLOSE, SPACE_CLOSE, SPACE})  # no blank start
    assert state.allowed(20) == ("ban", first)
    state.advance(ECO)
    assert state.allowed(20) == ("ban", SLOT_BANNED)
    assert state.allowed(2) == ("only", [CLOSE, X_CLOSE, SPACE_CLOSE])  # close, stop
    state.advance(X_CLOSE)
    assert state.allowed(20) == ("only", [STOP])
    assert state.text == "xAction: search[ecox]"


def test_a_slot_beside_listed_actions_after_the_first_line(vocab):
    state = slot_row(vocab, ("go left",))
    for token in (X, NEWLINE):
        state.advance(token)
    assert state.allowed(20) == ("only", [ACTION_TAG])
    state.advance(ACTION_TAG)
    assert state.allowed(20) == ("only", [SPACE, 11])  # " " "search[" or " go"
    state.advance(11)
    assert state.allowed(20) == ("only", [12])
    assert state.slot is None


def test_a_slot_opening_begun_inside_the_tag_token_is_followed_letter_by_letter(vocab):
    state = slot_row(vocab)
    for token in (X, 9, TAG_SE):  # "Action" ": se"
        state.advance(token)
    assert state.allowed(20) == ("only", [ARCH])
    state.advance(ARCH)
    assert state.slot == "" and SPACE in state.allowed(20)[1]  # no blank start


def test_a_long_thought_keeps_room_for_the_slot_and_its_text(vocab):
    # "\n" "Action:" " " "search[" + 8 tokens of query, stop, margin
    state = slot_row(vocab)
    assert state.reserve == 4 + 8 + 1 + 2
    state.advance(X)
    for token in (NEWLINE, ACTION_TAG, SPACE, SEARCH):  # the cut-off is spelled
        assert state.allowed(state.reserve) == ("only", [token])
        state.advance(token)
    assert state.slot == ""


def test_a_slot_left_empty_until_the_end_still_closes_on_visible_text(vocab):
    state = slot_row(vocab, form="text")
    assert state.allowed(20) == ("only", [SEARCH])  # text replies: the action at once
    state.advance(SEARCH)
    assert state.allowed(2) == ("only", [X_CLOSE])  # "x]", not "]" or " ]"


def test_a_slot_is_closed_once_its_text_reaches_the_cap(vocab):
    state = slot_row(vocab)
    for token in (X, 9, 7, SPACE, SEARCH):
        state.advance(token)
    for _ in range(SLOT_MAX_CHARS // 3 + 1):
        state.advance(ECO)
    assert state.allowed(20) == ("only", [CLOSE, X_CLOSE, SPACE_CLOSE])


def test_a_code_format_or_empty_list_cannot_be_constrained():
    with pytest.raises(EvoflowError, match="one line"):
        ActionChoice(("x",), "code")
    with pytest.raises(EvoflowError, match="non-empty"):
        ActionChoice((), "react")
    with pytest.raises(EvoflowError, match="slot's opening"):
        ActionChoice((), "react", ("search[a]",))
    with pytest.raises(EvoflowError, match="slot's opening"):
        ActionChoice((), "react", ("search\r[",))


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


def test_a_webshop_search_under_the_constraint_is_a_query_the_shop_runs(tiny):
    # Execute: the random model writes noise; under the slot its action is a search
    from evoflow.envs import make_env

    env = make_env("webshop")
    env.reset(env.task_ids("test")[0])
    page = [
        {"role": "system", "content": "Shop."},
        {"role": "user", "content": env.observation},
    ]
    choice = ActionChoice((), "react", tuple(env.action_slots()))
    params = SamplingParams(temperature=1.0, max_new_tokens=24)
    held = tiny.generate(
        [page] * 12, params, seeds=list(range(12)), choices=[choice] * 12
    )

    # Assert: one line "search[<something>]", which the shop accepts
    react = reply_format("react")
    actions = [react.parse(g.text).action for g in held]
    assert all(g.finish == "stop" for g in held), [g.text for g in held]
    for action in actions:
        assert action.startswith("search[") and action.endswith("]"), action
        assert "\n" not in action and action[7:-1].strip() and "]" not in action[7:-1]
        env.reset(env.task_ids("test")[0])
        assert env.step(action).valid, action

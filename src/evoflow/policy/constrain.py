"""Action-constrained decoding: free thought, an action from the env's list.

A row that carries an ``ActionChoice`` is decoded in two phases. In ReAct
replies the ``Thought:`` line is free text (only ending the turn is forbidden,
since a reply without an action is unusable); once the reply writes its
``Action:`` tag — or its first line ends, or only enough tokens for the longest
action are left — every further token must keep the text on the way to one of
the listed actions, and the turn may end only where one is complete. In
``text`` replies the whole reply is the action, so the constraint holds from
the first token.

From there the reply follows a token trie: each listed action (with its
``Action:`` scaffold where that is still to come) spelled in the tokenizer's
own tokens, then a stop token. Letting any token whose text merely extends an
action through would let a model that does not expect the action spell it
letter by letter and run out of tokens. Only where the token that completed the
tag already began the action is the rest followed character by character.
An action may also be a slot (``ActionChoice.slots``): its opening, such as
WebShop's ``search[``, is followed like a listed action, then free printable
text on the same line (no ``:``, which could start a second ``Action:`` tag),
beginning with a visible character and closed with ``]`` in time for the turn
to end, or once it is ``SLOT_MAX_CHARS`` long. Log-probabilities stay those of
the unconstrained model (``Generation.logprobs``); only sampling is restricted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import torch

from evoflow.envs.formats import ACTION_TAG
from evoflow.policy.base import ActionChoice

MARGIN_TOKENS = 2  # spare tokens kept for an action spelled in more tokens
SLOT_END = "]"  # closes a slot's free text
SLOT_TOKENS = 8  # tokens kept for a slot's text when a long thought is cut off
SLOT_MAX_CHARS = 200  # a slot's text is closed once it is this long


class SlotTokens(NamedTuple):
    """Token ids by their part in a slot's text (``Vocabulary.slot_tokens``)."""

    banned: list[int]  # never inside a slot
    closing: list[int]  # end with ``]``: close the slot
    blank: list[int]  # whitespace only: not the first of a slot's text
    filled: list[int]  # close the slot after visible text of their own


class Vocabulary:
    """The text of every token, and the tokens of every text, for one tokenizer."""

    def __init__(self, tokenizer, stop_ids: set[int]) -> None:
        special = set(tokenizer.all_special_ids)
        size = len(tokenizer)
        texts = tokenizer.batch_decode([[i] for i in range(size)])
        self.texts = ["" if i in special else t for i, t in enumerate(texts)]
        self.by_text: dict[str, list[int]] = {}
        for i, text in enumerate(self.texts):
            if text:
                self.by_text.setdefault(text, []).append(i)
        self.stop_ids = sorted(stop_ids)
        self._tokenizer = tokenizer
        self._spellings: dict[str, list[int]] = {}

    def spell(self, text: str, stop: bool = True) -> list[int]:
        """``text`` in the tokenizer's own tokens, followed by a stop token
        unless ``stop`` is False (a slot's opening)."""
        if text not in self._spellings:
            ids = self._tokenizer(text, add_special_tokens=False)["input_ids"]
            self._spellings[text] = list(ids)
        ids = self._spellings[text]
        return [*ids, self.stop_ids[0]] if stop else list(ids)

    @cached_property
    def slot_tokens(self) -> SlotTokens:
        """What a slot's text may take: printable text (one line, as the reply
        parser reads it) without ``:`` (a second ``Action:`` tag), where ``]``
        may only end a token, which closes the slot."""
        banned, closing, blank = set(self.stop_ids), [], []
        for i, text in enumerate(self.texts):
            unfit = i in banned or not text or not text.isprintable() or ":" in text
            if unfit or SLOT_END in text[:-1]:
                banned.add(i)
            elif text.endswith(SLOT_END):
                closing.append(i)
            elif not text.strip():
                blank.append(i)
        filled = [i for i in closing if self.texts[i][:-1].strip()]
        return SlotTokens(sorted(banned), closing, blank, filled)

    def length(self, text: str) -> int:
        """Tokens of ``text`` in the tokenizer's own spelling."""
        return len(self.spell(text)) - 1


@dataclass
class RowConstraint:
    """The decoding state of one constrained row.

    Aimed-at texts are followed along their tokenizer spelling (a token trie)
    when the constrained part starts on a token boundary, and character by
    character when the token that wrote the tag also began the action. A text
    that opens a slot hands the row over to the slot's free text (``slot``).
    """

    vocab: Vocabulary
    choice: ActionChoice
    text: str = ""
    anchor: int | None = None  # where the aimed-at texts start in ``text``
    targets: list[str] = field(default_factory=list)
    openings: tuple[str, ...] = ()  # targets that open a slot, longest first
    spelled: list[list[int]] | None = None  # token spellings still followed
    lost: bool = False  # the free text already left every target: decode freely
    reserve: int = 0  # tokens the forced action may need
    slot: str | None = None  # the free text written into an open slot

    def __post_init__(self) -> None:
        if self.choice.form == "text":
            self._aim(0, "")
        spell = self.vocab.length
        lengths = [spell(f"\nAction: {a}") for a in self.choice.actions]
        lengths += [spell(f"\nAction: {s}") + SLOT_TOKENS for s in self.choice.slots]
        self.reserve = max(lengths) + 1 + MARGIN_TOKENS

    def allowed(self, steps_left: int) -> tuple[str, list[int]]:
        """``("only", ids)``: sample among ``ids``; ``("ban", ids)``: all but ``ids``."""
        if self.slot is not None:
            return self._in_slot(steps_left)
        if self.anchor is None and not self.lost and steps_left <= self.reserve:
            self._aim(len(self.text), "\nAction: ")
        if self.lost:
            return "ban", []
        if self.anchor is None:
            return "ban", self.vocab.stop_ids
        ids: set[int] = set()
        if self.spelled is not None:
            for tokens in self.spelled:
                ids.update(tokens[:1] or self.vocab.stop_ids)
            return "only", sorted(ids)
        rest = self.text[self.anchor :]
        for target in self.targets:
            if target == rest:
                ids.update(self.vocab.stop_ids)
            left = target[len(rest) :]
            for k in range(1, len(left) + 1):
                ids.update(self.vocab.by_text.get(left[:k], ()))
        return "only", sorted(ids) or self.vocab.stop_ids

    def advance(self, token: int) -> None:
        """Take the sampled token into the reply."""
        piece = self.vocab.texts[token]
        self.text += piece
        if self.slot is not None:
            self.slot += piece
        elif self.spelled is not None:
            self.spelled = [t[1:] for t in self.spelled if t[:1] == [token]]
            self.lost = not self.spelled
            if [] in self.spelled and token not in self.vocab.stop_ids:
                self.slot, self.spelled = "", None  # a slot's opening is spelled
        elif self.anchor is not None:
            rest = self.text[self.anchor :]
            if not self._open(rest):
                self.targets = [t for t in self.targets if t.startswith(rest)]
                self.lost = not self.targets
        elif not self.lost:
            self._switch()

    def _open(self, rest: str) -> bool:
        """Enter the slot whose opening ``rest`` has written, if one has."""
        for opening in self.openings:
            if rest.startswith(opening):
                self.slot = rest[len(opening) :]
                return True
        return False

    def _in_slot(self, steps_left: int) -> tuple[str, list[int]]:
        """Free text, then ``]`` in time for the turn to end, then the end."""
        tokens = self.vocab.slot_tokens
        if self.slot.endswith(SLOT_END):
            return "only", self.vocab.stop_ids
        if not self.slot.strip():  # the first token shows something
            if steps_left <= 2:
                return "only", tokens.filled or tokens.closing
            return "ban", sorted({*tokens.banned, *tokens.closing, *tokens.blank})
        if steps_left <= 2 or len(self.slot) >= SLOT_MAX_CHARS:
            return "only", tokens.closing
        return "ban", tokens.banned

    def _switch(self) -> None:
        """Aim at an action once the tag is written or the first line ends."""
        tag = ACTION_TAG.search(self.text)
        if tag is not None:
            self._aim(tag.end(), " ", also="")
            return
        start = len(self.text) - len(self.text.lstrip())
        newline = self.text.find("\n", start)
        if newline >= 0 and self.text[start:newline].strip():
            after = newline
            while after < len(self.text) and self.text[after] == "\n":
                after += 1
            self._aim(after, "Action: ")

    def _aim(self, anchor: int, lead: str, also: str | None = None) -> None:
        """Aim at every action and slot opening written after ``lead`` (or
        ``also``), from ``anchor`` on."""
        leads = [lead] if also is None else [lead, also]
        openings = {f"{p}{s}" for p in leads for s in self.choice.slots}
        targets = [f"{p}{a}" for p in leads for a in self.choice.actions]
        targets += sorted(openings)
        rest = self.text[anchor:]
        self.openings = tuple(sorted(openings, key=lambda o: (-len(o), o)))
        if self._open(rest):
            return
        kept = [t for t in targets if t.startswith(rest)]
        self.anchor, self.targets, self.lost = anchor, kept, not kept
        if not rest and kept:
            spaced = [t for t in kept if t.startswith(" ")]
            self.spelled = [
                self.vocab.spell(t, stop=t not in openings)
                for t in (spaced or [t for t in kept if not t.startswith(" ")])
            ]


def constraints_for(
    vocab: Vocabulary | None, choices: Sequence[ActionChoice | None] | None, rows: int
) -> list[RowConstraint | None] | None:
    """One decoding state per row (None: the row is free); None when none is."""
    if not choices or all(c is None for c in choices):
        return None
    if len(choices) != rows:
        raise ValueError(f"{len(choices)} action choices for {rows} chats")
    assert vocab is not None
    return [None if c is None else RowConstraint(vocab, c) for c in choices]


def restrict(logits: torch.Tensor, rows: list[RowConstraint | None], steps_left: int):
    """Mask, in place, what each constrained row may not sample next."""
    for i, row in enumerate(rows):
        if row is None:
            continue
        kind, ids = row.allowed(steps_left)
        if kind == "ban":
            logits[i, ids] = float("-inf")
        else:
            keep = logits[i, ids].clone()
            logits[i] = float("-inf")
            logits[i, ids] = keep

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
Log-probabilities stay those of the unconstrained model
(``Generation.logprobs``); only sampling is restricted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from evoflow.envs.formats import ACTION_TAG
from evoflow.policy.base import ActionChoice

MARGIN_TOKENS = 2  # spare tokens kept for an action spelled in more tokens


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

    def spell(self, text: str) -> list[int]:
        """``text`` in the tokenizer's own tokens, followed by a stop token."""
        if text not in self._spellings:
            ids = self._tokenizer(text, add_special_tokens=False)["input_ids"]
            self._spellings[text] = [*ids, self.stop_ids[0]]
        return list(self._spellings[text])

    def length(self, text: str) -> int:
        """Tokens of ``text`` in the tokenizer's own spelling."""
        return len(self.spell(text)) - 1


@dataclass
class RowConstraint:
    """The decoding state of one constrained row.

    Aimed-at texts are followed along their tokenizer spelling (a token trie)
    when the constrained part starts on a token boundary, and character by
    character when the token that wrote the tag also began the action.
    """

    vocab: Vocabulary
    choice: ActionChoice
    text: str = ""
    anchor: int | None = None  # where the aimed-at texts start in ``text``
    targets: list[str] = field(default_factory=list)
    spelled: list[list[int]] | None = None  # token spellings still followed
    lost: bool = False  # the free text already left every target: decode freely
    reserve: int = 0  # tokens the forced action may need

    def __post_init__(self) -> None:
        if self.choice.form == "text":
            self._aim(0, list(self.choice.actions))
        longest = max(self.vocab.length(f"\nAction: {a}") for a in self.choice.actions)
        self.reserve = longest + 1 + MARGIN_TOKENS

    def allowed(self, steps_left: int) -> tuple[str, list[int]]:
        """``("only", ids)``: sample among ``ids``; ``("ban", ids)``: all but ``ids``."""
        if self.anchor is None and not self.lost and steps_left <= self.reserve:
            self._aim(len(self.text), [f"\nAction: {a}" for a in self.choice.actions])
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
        self.text += self.vocab.texts[token]
        if self.spelled is not None:
            self.spelled = [t[1:] for t in self.spelled if t[:1] == [token]]
            self.lost = not self.spelled
        elif self.anchor is not None:
            rest = self.text[self.anchor :]
            self.targets = [t for t in self.targets if t.startswith(rest)]
            self.lost = not self.targets
        elif not self.lost:
            self._switch()

    def _switch(self) -> None:
        """Aim at an action once the tag is written or the first line ends."""
        tag = ACTION_TAG.search(self.text)
        if tag is not None:
            actions = self.choice.actions
            self._aim(tag.end(), [f" {a}" for a in actions] + list(actions))
            return
        start = len(self.text) - len(self.text.lstrip())
        newline = self.text.find("\n", start)
        if newline >= 0 and self.text[start:newline].strip():
            after = newline
            while after < len(self.text) and self.text[after] == "\n":
                after += 1
            self._aim(after, [f"Action: {a}" for a in self.choice.actions])

    def _aim(self, anchor: int, targets: list[str]) -> None:
        rest = self.text[anchor:]
        kept = [t for t in targets if t.startswith(rest)]
        self.anchor, self.targets, self.lost = anchor, kept, not kept
        if not rest and kept:
            spelled = [self.vocab.spell(t) for t in kept if not t.startswith(" ")]
            spaced = [self.vocab.spell(t) for t in kept if t.startswith(" ")]
            self.spelled = spaced or spelled


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

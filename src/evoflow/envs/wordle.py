"""Wordle: find a hidden five-letter word in six guesses from letter feedback.

Description
-----------
LMRL-Gym semantics: the hidden word is not fixed at the start. After each valid
guess the game draws (with the task's seed) one word among those still consistent
with all feedback so far, scores the guess against it, and keeps only the words
that would have produced the same feedback. A guess outside the vocabulary is an
"invalid word" and uses up a try.

Test tasks ``0``-``24`` use the 40-word vocabulary of AgentGym's Wordle (seed =
task id). Training tasks ``100``-``599`` use the same vocabulary with other seeds;
``10000``-``10499`` use the 2,315 common answer words. Validation tasks
``600``-``699`` play the 40-word game with seeds that neither other split uses.

Since no game has a fixed answer, what a task is in substance
(``content_key``) is its vocabulary and seed, not a hidden word: two tasks with
the same pair play identically against the same guesses.

Observation
-----------
The first observation states the vocabulary (listed when it has at most 100
words). Feedback is five space-separated letters: ``g`` right letter in the right
place, ``y`` in the word elsewhere, ``b`` not in the word.

Actions
-------
A guess written as five space-separated letters (``s h i r e``); the plain word
(``shire``) is accepted too.

Rewards and termination
-----------------------
Reward 1 and success when a guess earns ``g g g g g``; the game ends after six
tries. Default turn cap 8 (AgentGym's).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from evoflow.envs.base import Step, TaskError, TextEnv
from evoflow.provenance import REPO_ROOT
from evoflow.seeding import py_random

WORD_DIR = REPO_ROOT / "data" / "wordle"
TRIES = 6
LISTED_VOCAB_MAX = 100
TEST_COUNT = 25
SMALL_TRAIN = range(100, 600)
SMALL_VALIDATION = range(600, 700)
LARGE_TRAIN = range(10_000, 10_500)


@cache
def vocabulary(name: str) -> tuple[str, ...]:
    """A word list from ``data/wordle/<name>.txt`` (sorted, lower case)."""
    words = (WORD_DIR / f"{name}.txt").read_text().split()
    return tuple(sorted({w.strip().lower() for w in words}))


def feedback(guess: str, hidden: str) -> str:
    """Wordle colouring; repeated letters earn ``y`` only as often as they occur."""
    marks = ["b"] * 5
    unmatched = Counter(h for g, h in zip(guess, hidden, strict=True) if g != h)
    for i, (g, h) in enumerate(zip(guess, hidden, strict=True)):
        if g == h:
            marks[i] = "g"
        elif unmatched[g] > 0:
            marks[i] = "y"
            unmatched[g] -= 1
    return " ".join(marks)


def task_vocabulary(task_id: str) -> str:
    """Which word list a task id plays with."""
    try:
        index = int(task_id)
    except ValueError:
        raise TaskError(f"wordle: task id {task_id!r} is not an integer") from None
    if 0 <= index < TEST_COUNT or index in SMALL_TRAIN or index in SMALL_VALIDATION:
        return "vocab40"
    if index in LARGE_TRAIN:
        return "answers"
    raise TaskError(f"wordle: no task with id {task_id!r}")


def parse_guess(action: str) -> str | None:
    """Five letters from 's h i r e' or 'shire'; None for anything else."""
    text = action.strip().strip(".").strip('"').lower()
    if re.fullmatch(r"[a-z]( [a-z]){4}", text):
        return text.replace(" ", "")
    if re.fullmatch(r"[a-z]{5}", text):
        return text
    return None


class WordleEnv(TextEnv):
    name = "wordle"
    lists_actions = True
    max_turns = 8
    instructions = (
        "You are playing Wordle: find the hidden five-letter word in at most six "
        "guesses. After each guess you get five feedback letters, one per position: "
        "'g' means that letter is in the hidden word at exactly this position, 'y' "
        "means it is in the hidden word but somewhere else, 'b' means it is not in "
        "the hidden word. Only words from the game's vocabulary are accepted; any "
        "other guess is an invalid word and still uses up a try.\n"
        "Action: your guess as five letters separated by spaces, for example "
        "a p p l e."
    )

    @classmethod
    def stratum(cls, task_id: str) -> str:
        """The word list the task plays with: ``vocab40`` (AgentGym's 40 words,
        listed in the first observation) or ``answers`` (2,315 common words)."""
        return task_vocabulary(task_id)

    @classmethod
    def content_key(cls, task_id: str) -> str:
        """The vocabulary and the seed (``vocab40/seed 7``). An LMRL-Gym game has
        no fixed answer: the hidden word is drawn, with the task's seed, as the
        guesses come in, so vocabulary and seed are all that make a game."""
        return f"{task_vocabulary(task_id)}/seed {task_id}"

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        return {
            "test": [str(i) for i in range(TEST_COUNT)],
            "train": [str(i) for i in (*SMALL_TRAIN, *LARGE_TRAIN)],
            "validation": [str(i) for i in SMALL_VALIDATION],
        }

    def _reset(self, task_id: str) -> str:
        self._vocab = vocabulary(task_vocabulary(task_id))
        self._known = frozenset(self._vocab)
        self._candidates = list(self._vocab)
        self._random = py_random("wordle", task_id)
        self._tries = 0
        if len(self._vocab) <= LISTED_VOCAB_MAX:
            words = ", ".join(self._vocab)
            scope = (
                f"The hidden word is one of these {len(self._vocab)} words: {words}."
            )
        else:
            scope = "The hidden word is a common five-letter English word."
        return f"A new game of Wordle begins. {scope} You have {TRIES} guesses."

    def _step(self, action: str) -> Step:
        self._tries += 1
        left = TRIES - self._tries
        guess = parse_guess(action)
        if guess is None or guess not in self._known:
            shown = " ".join(guess) if guess else action.strip()[:40]
            return self._after(f"'{shown}' is an invalid word.", left, valid=False)
        hidden = self._random.choice(self._candidates)
        marks = feedback(guess, hidden)
        self._candidates = [w for w in self._candidates if feedback(guess, w) == marks]
        if marks == "g g g g g":
            return Step(
                f"Feedback: {marks}. You found the word '{hidden}'.", 1.0, True, True
            )
        return self._after(f"Feedback for {' '.join(guess)}: {marks}.", left)

    def _after(self, message: str, left: int, valid: bool = True) -> Step:
        if left == 0:
            word = self._random.choice(self._candidates)
            return Step(
                f"{message} No guesses left; the word was '{word}'.",
                0.0,
                True,
                False,
                valid,
            )
        plural = "es" if left > 1 else ""
        return Step(f"{message} {left} guess{plural} left.", 0.0, False, False, valid)

    def available_actions(self) -> list[str]:
        """Every word of the game's vocabulary, spelled as a guess."""
        return [" ".join(word) for word in self._vocab] if self.running else []

    @property
    def candidates(self) -> tuple[str, ...]:
        """Words still consistent with all feedback (the test vocabulary before a game)."""
        if not hasattr(self, "_candidates"):
            return vocabulary("vocab40")
        return tuple(self._candidates)

    def expert_action(self) -> tuple[str, str]:
        """Guess the consistent word that best splits the remaining candidates."""
        self._check_running()
        candidates = self._candidates
        if len(candidates) == 1:
            word = candidates[0]
            thought = f"Only '{word}' fits every clue so far."
        else:
            word = _best_split(tuple(candidates))
            thought = (
                f"{len(candidates)} words still fit the clues; '{word}' is one of them "
                "and narrows them down the most."
            )
        return thought, " ".join(word)


@cache
def _best_split(candidates: tuple[str, ...]) -> str:
    """Candidate whose feedback leaves the smallest expected candidate set."""
    if len(candidates) > 300:  # scoring all pairs would be slow: rank by letter spread
        counts = Counter(ch for w in candidates for ch in set(w))
        return max(candidates, key=lambda w: (sum(counts[ch] for ch in set(w)), w))
    best, best_score = candidates[0], float("inf")
    for guess in candidates:
        groups = Counter(feedback(guess, hidden) for hidden in candidates)
        score = sum(n * n for n in groups.values())
        if score < best_score:
            best, best_score = guess, score
    return best

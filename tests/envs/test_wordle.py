from __future__ import annotations

from evoflow.envs import make_env, play_expert
from evoflow.envs.wordle import feedback, parse_guess, vocabulary


def test_feedback_handles_repeated_letters():
    assert feedback("robot", "robin") == "g g g b b"
    assert feedback("allee", "apple") == "g y b b g"
    assert feedback("eerie", "elder") == "g y y b b"
    assert feedback("shire", "shire") == "g g g g g"


def test_guess_parsing():
    assert parse_guess("s h i r e") == "shire"
    assert parse_guess(" Shire. ") == "shire"
    assert parse_guess("s h i r") is None
    assert parse_guess("guess shire") is None


def test_scripted_actions_give_exact_observations():
    # Prepare
    env = make_env("wordle")

    # Execute
    first = env.reset("3")
    steps = [env.step(a) for a in ["s h i r e", "x y z z y", "p o i n t"]]

    # Assert
    assert first.startswith(
        "A new game of Wordle begins. The hidden word is one of these 40 words: aloft, "
        "aroma, caulk,"
    )
    assert first.endswith("whack, wince, wrung. You have 6 guesses.")
    assert [s.observation for s in steps] == [
        "Feedback for s h i r e: b b b y b. 5 guesses left.",
        "'x y z z y' is an invalid word. 4 guesses left.",
        "Feedback for p o i n t: b y b b b. 3 guesses left.",
    ]
    assert [s.valid for s in steps] == [True, False, True]


def test_same_task_same_guesses_same_game():
    a, b = make_env("wordle"), make_env("wordle")
    a.reset("7")
    b.reset("7")
    for guess in ["p a n i c", "s o l a r", "r o b o t"]:
        assert a.step(guess) == b.step(guess)


def test_six_tries_then_game_over():
    env = make_env("wordle")
    env.reset("0")
    results = [env.step("z z z z z") for _ in range(6)]
    assert [r.done for r in results] == [False] * 5 + [True]
    assert not results[-1].success and "No guesses left" in results[-1].observation


def test_vocabularies_and_splits():
    assert len(vocabulary("vocab40")) == 40
    assert len(vocabulary("answers")) == 2315
    env = make_env("wordle")
    assert env.task_ids("test") == [str(i) for i in range(25)]
    large = play_expert(env, "10000")
    assert large.success and "common five-letter" in large.first_observation

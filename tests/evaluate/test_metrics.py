"""Evaluation metrics: the stuck-repeating count, on hand-written episodes."""

from __future__ import annotations

from evoflow.evaluate.metrics import episode_metrics, stuck_repeating
from evoflow.store.schema import Episode, Message


def episode(replies: list[str], success: bool = False) -> Episode:
    messages = [Message("system", "rules"), Message("user", "task")]
    for reply in replies:
        messages += [
            Message("assistant", reply, True),
            Message("user", "nothing happens"),
        ]
    return Episode(experiment="x", method="fedse", env="textcraft", task_id="t",
                   split="test", episode_id=str(len(replies)), source="eval",
                   model_id="m", success=success, n_turns=len(replies),
                   messages=messages)  # fmt: skip


def test_a_failed_episode_repeating_its_last_three_actions_is_stuck():
    loop = [f"Thought: I need bricks {k}.\nAction: get 4 brick" for k in range(3)]
    # the thoughts differ; the action is the same on each of the last three turns
    assert stuck_repeating(episode(["Thought: look.\nAction: inventory", *loop]))
    # the same loop ending in a success is not stuck
    assert not stuck_repeating(episode(loop, success=True))
    # two repeats are not enough; a different action among the last three breaks it
    assert not stuck_repeating(episode(loop[:2]))
    assert not stuck_repeating(
        episode([*loop[:2], "Thought: hm.\nAction: craft 1 wall"])
    )
    # replies with no Action line compare whole (an unusable reply said three times)
    assert stuck_repeating(episode(["I do not know."] * 3))
    assert not stuck_repeating(
        episode(["I do not know.", "No idea.", "I do not know."])
    )


def test_stuck_rate_is_the_share_of_all_episodes():
    # 1 stuck of 4: a loop, a success, a varied failure, a two-turn failure
    loop = ["Thought: t\nAction: go north"] * 4
    played = [episode(loop), episode(loop, success=True),
              episode(["Action: a", "Action: b", "Action: c"]), episode(loop[:2])]  # fmt: skip
    assert episode_metrics(played)["stuck_rate"] == 0.25
    assert episode_metrics([])["stuck_rate"] == 0.0

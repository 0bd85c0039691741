from __future__ import annotations

import pytest

from evoflow.envs import EnvError, TaskError, make_env, play_expert
from evoflow.envs.maze import DOUBLE_T, TEST_STARTS, layout_for


def test_scripted_actions_give_exact_observations():
    # Prepare
    env = make_env("maze")

    # Execute
    first = env.reset("0")
    steps = [
        env.step(a)
        for a in ["move up", "move right", "move right", "jump", "move down"]
    ]

    # Assert
    assert first == (
        "The goal is at position 8, 6. Your current position is at "
        "position 1, 1. There are walls to your left, above you, below you."
    )
    assert steps[0].observation == (
        "You bumped into a wall. The goal is at position 8, 6. Your current position is "
        "at position 1, 1. There are walls to your left, above you, below you."
    )
    assert steps[1].observation == (
        "The goal is at position 8, 6. Your current position is at position 1, 2. "
        "There are walls above you, below you."
    )
    assert steps[2].observation == (
        "The goal is at position 8, 6. Your current position is at position 1, 3. "
        "There is a wall above you."
    )
    assert not steps[3].valid and steps[3].observation.startswith(
        "'jump' is not a valid"
    )
    assert steps[4].observation.endswith(
        "position 2, 3. There are walls to your right, to your left."
    )
    assert [s.done for s in steps] == [False] * 5


def test_reaching_the_goal_ends_with_reward():
    env = make_env("maze")
    env.reset("18")  # start (7, 6), right above the goal
    result = env.step("move down")
    assert (result.reward, result.done, result.success) == (1.0, True, True)
    assert result.observation == "You reached the goal at position 8, 6."
    with pytest.raises(EnvError, match="no running episode"):
        env.step("move down")


def test_test_split_is_agentgym_double_t():
    env = make_env("maze")
    ids = env.task_ids("test")
    assert ids == [str(i) for i in range(25)]
    assert [layout_for(i).start for i in ids] == list(TEST_STARTS)
    assert all(
        layout_for(i).grid == DOUBLE_T and layout_for(i).goal == (8, 6) for i in ids
    )


def test_train_and_validation_tasks_never_repeat_a_test_task():
    env = make_env("maze")

    def tasks(split):
        return {
            (layout_for(i).grid, layout_for(i).goal, layout_for(i).start)
            for i in env.task_ids(split)
        }

    test, train, validation = tasks("test"), tasks("train"), tasks("validation")
    assert len(train) == 885 and len(validation) == 200
    assert not test & train and not test & validation and not train & validation
    assert {grid for grid, _, _ in validation} == {DOUBLE_T}


def test_expert_takes_shortest_paths():
    env = make_env("maze")
    trajectory = play_expert(env, "0")
    assert trajectory.success and len(trajectory.turns) == 12


def test_unknown_task_and_step_before_reset():
    env = make_env("maze")
    with pytest.raises(EnvError, match="reset"):
        env.step("move up")
    with pytest.raises(TaskError, match="no task with id '99999'"):
        env.reset("99999")
    with pytest.raises(TaskError, match="not an integer"):
        env.reset("abc")

from __future__ import annotations

import pytest

from evoflow.envs import TaskError, make_env, play_expert
from evoflow.envs.babyai_world import LEVELS, TASK_LIMIT, front, level_for

FIRST_VIEW_OF_TASK_1 = (
    "You see yellow key 1, 1 step ahead and 1 step to your left; grey ball 2, 1 step "
    "ahead and 1 step to your right; purple key 1, 2 steps ahead and 1 step to your "
    "left; blue key 1, 2 steps ahead and 1 step to your right; red box 1, 2 steps "
    "ahead and 2 steps to your right; green key 1, 4 steps ahead and 2 steps to your "
    "right; grey ball 1, 5 steps ahead and 1 step to your right; red ball 1, 4 steps "
    "ahead and 3 steps to your right.\n"
    "The way ahead is clear for 5 steps, then comes a wall.\n"
    "You are carrying nothing."
)
VIEW_AFTER_PICKUP = (
    "You see blue key 1, 2 steps ahead; yellow key 1, 1 step ahead and 2 steps to "
    "your left; red box 1, 2 steps ahead and 1 step to your right; purple key 1, 2 "
    "steps ahead and 2 steps to your left; green key 1, 4 steps ahead and 1 step to "
    "your right; grey ball 1, 5 steps ahead; red ball 1, 4 steps ahead and 2 steps "
    "to your right.\n"
    "The way ahead is clear for 1 step, then comes the blue key 1.\n"
)


def test_scripted_actions_give_exact_observations():
    # Prepare
    env = make_env("babyai")
    script = [
        "turn right",
        "pick up grey ball 2",
        "go to red ball 7",
        "drop",
        "go to red ball 1",
    ]

    # Execute
    first = env.reset("1")
    steps = [env.step(action) for action in script]

    # Assert
    assert first == f"Your goal: go to the red ball\n{FIRST_VIEW_OF_TASK_1}"
    assert steps[0].observation == (
        "You turned right.\n"
        "You see grey ball 2, 1 step ahead and 1 step to your left; blue key 1, 1 step "
        "ahead and 2 steps to your left; red box 1, 2 steps ahead and 2 steps to your "
        "left.\n"
        "The way ahead is clear for 4 steps, then comes a wall.\n"
        "You are carrying nothing."
    )
    assert steps[1].observation == (
        "You walked to grey ball 2 and now face it. You picked it up.\n"
        f"{VIEW_AFTER_PICKUP}You are carrying grey ball 2."
    )
    assert steps[2].observation == (
        f"You have not seen any red ball 7.\n{VIEW_AFTER_PICKUP}You are carrying grey ball 2."
    )
    assert steps[3].observation.startswith(
        "You put grey ball 2 down in front of you.\nYou see grey ball 2, 1 step ahead;"
    )
    assert steps[3].observation.endswith(
        "Directly in front of you is the grey ball 2.\nYou are carrying nothing."
    )
    assert steps[4].observation == (
        "You walked to red ball 1 and now face it. You completed the goal: go to the red ball."
    )
    assert [s.valid for s in steps] == [True, True, False, True, True]
    assert [s.done for s in steps] == [False] * 4 + [True]
    assert steps[4].success and steps[4].reward == pytest.approx(1 - 0.9 * 12 / 64)


def test_go_to_walks_next_to_the_object_and_faces_it():
    env = make_env("babyai")
    env.reset("1")
    result = env.step("go to blue key 1")
    world = env._world
    assert result.valid and not result.done
    assert result.observation.startswith("You walked to blue key 1 and now face it.")
    assert "Directly in front of you is the blue key 1." in result.observation
    assert world.name(world.cell(front(world.pose))) == "blue key 1"


def test_pick_up_moves_the_object_into_the_inventory():
    env = make_env("babyai")
    env.reset("1")
    result = env.step("pick up red box 1")
    assert result.observation.splitlines()[-1] == "You are carrying red box 1."
    assert env._world.name(env._world.carrying) == "red box 1"
    refused = env.step("pick up blue key 1")
    assert not refused.valid
    assert refused.observation.startswith("Your hands are full: you carry red box 1.")


def test_locked_door_needs_the_matching_key():
    # Task 26 (UnlockPickupDist) starts beside a locked green door.
    env = make_env("babyai")
    first = env.reset("26")
    pose = env._world.pose
    assert "locked green door 1, 1 step to your left" in first
    result = env.step("toggle and go through green door 1")
    assert not result.valid and not result.done
    assert result.observation.startswith(
        "The green door 1 is locked; you need a green key to open it."
    )
    assert env._world.pose == pose
    env.step("turn left")
    assert not env.step("toggle").valid
    assert not env.step("go through green door 1").valid


def test_objects_not_seen_yet_and_garbage_are_invalid():
    env = make_env("babyai")
    env.reset("26")  # the purple box waits behind the locked door
    unseen = env.step("go to purple box 1")
    garbage = env.step("jump over the wall")
    assert not unseen.valid and unseen.observation.startswith(
        "You have not seen any purple box 1."
    )
    assert not garbage.valid and garbage.observation.startswith(
        "'jump over the wall' is not an action here."
    )


def test_available_actions_list_what_makes_sense():
    env = make_env("babyai")
    env.reset("1")
    actions = env.available_actions()
    assert actions[:3] == ["turn left", "turn right", "move forward"]
    assert {"go to red ball 1", "pick up red ball 1", "pick up grey ball 2"} <= set(
        actions
    )
    assert "drop" not in actions and actions[-1] == "check available actions"
    listed = env.step("check available actions")
    assert listed.valid and listed.observation.startswith(
        "Available actions: turn left,"
    )


def test_running_out_of_minigrid_steps_ends_without_success():
    env = make_env("babyai")
    env.reset("1")
    env._world.game.max_steps = env._world.game.step_count + 1
    result = env.step("turn left")
    assert (result.done, result.success, result.reward) == (True, False, 0.0)
    assert result.observation == (
        "You turned left. Time is up: the level allows only 1 step and the goal was "
        "not completed."
    )


def test_task_ids_follow_agentgym_data_idx():
    assert len(LEVELS) == 40
    assert level_for("0") == ("GoToRedBallGrey", 0)
    assert level_for("41") == ("GoToRedBall", 1)
    assert level_for("889") == ("GoToDoor", 22)
    assert level_for(str(TASK_LIMIT - 1)) == ("BossLevelNoUnlock", TASK_LIMIT // 40 - 1)
    env = make_env("babyai")
    assert env.task_ids("test") == [str(i) for i in range(90)]
    assert env.task_ids("train") == [str(i) for i in range(90, 890)]
    assert env.reset("38").startswith("Your goal: put the red box next to a grey door")
    for bad in ["-1", "abc", "1.0", "007", " 3", str(TASK_LIMIT)]:
        with pytest.raises(TaskError):
            env.reset(bad)


@pytest.mark.parametrize("task", ["22", "25", "38"])
def test_expert_solves_levels_the_minigrid_bot_cannot(task):
    # 22 starts carrying the object to move, 25 hides the key in a box, and 38
    # (BossLevel) is the longest test mission.
    trajectory = play_expert(make_env("babyai"), task)
    assert trajectory.success and len(trajectory.turns) <= 20
    assert all(turn.result.valid for turn in trajectory.turns)

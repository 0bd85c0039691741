from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from evoflow.envs import TaskError, make_env, play_expert, split_ids
from evoflow.envs.babyai_world import LEVELS, TASK_LIMIT, front, level_for

FIRST_VIEW_OF_TASK_1 = (
    "You see yellow key 1, 1 step ahead and 1 step to your left; grey ball 1, 1 step "
    "ahead and 1 step to your right; purple key 1, 2 steps ahead and 1 step to your "
    "left; blue key 1, 2 steps ahead and 1 step to your right; red box 1, 2 steps "
    "ahead and 2 steps to your right; grey ball 2, 5 steps ahead and 1 step to your "
    "right; green key 1, 4 steps ahead and 2 steps to your right; red ball 1, 4 steps "
    "ahead and 3 steps to your right.\n"
    "The way ahead is clear for 5 steps, then comes a wall.\n"
    "You are carrying nothing.\n"
    'Available actions: ["turn left", "turn right", "move forward", "pickup yellow '
    'key 1", "pickup grey ball 1", "pickup purple key 1", "pickup blue key 1", '
    '"pickup red box 1", "pickup grey ball 2", "pickup green key 1", "pickup red '
    'ball 1", "go to yellow key 1", "go to grey ball 1", "go to purple key 1", "go '
    'to blue key 1", "go to red box 1", "go to grey ball 2", "go to green key 1", '
    '"go to red ball 1", "check available actions"]'
)
VIEW_AFTER_PICKUP = (
    "You see blue key 1, 2 steps ahead; red box 1, 2 steps ahead and 1 step to your "
    "right; yellow key 1, 1 step ahead and 2 steps to your left; purple key 1, 2 "
    "steps ahead and 2 steps to your left; grey ball 2, 5 steps ahead; green key 1, "
    "4 steps ahead and 1 step to your right; red ball 1, 4 steps ahead and 2 steps "
    "to your right.\n"
    "The way ahead is clear for 1 step, then comes the blue key 1.\n"
    "You are carrying grey ball 1.\n"
    'Available actions: ["turn left", "turn right", "move forward", "drop", "go to '
    'blue key 1", "go to red box 1", "go to yellow key 1", "go to purple key 1", '
    '"go to grey ball 2", "go to green key 1", "go to red ball 1", "check available '
    'actions"]'
)


def test_scripted_actions_give_exact_observations():
    # Prepare
    env = make_env("babyai")
    script = [
        "turn right",
        "pickup grey ball 1",
        "go to red ball 7",
        "drop",
        "go to red ball 1",
    ]

    # Execute
    first = env.reset("1")
    steps = [env.step(action) for action in script]

    # Assert
    assert first == f"Your goal: go to the red ball\n{FIRST_VIEW_OF_TASK_1}"
    assert steps[0].observation.startswith(
        "You turned right.\n"
        "You see grey ball 1, 1 step ahead and 1 step to your left; blue key 1, 1 step "
        "ahead and 2 steps to your left; red box 1, 2 steps ahead and 2 steps to your "
        "left.\n"
        "The way ahead is clear for 4 steps, then comes a wall.\n"
        "You are carrying nothing.\n"
        'Available actions: ["turn left", "turn right", "move forward", "pickup grey '
        'ball 1", "pickup yellow key 1", '
    )
    assert steps[1].observation == (
        f"You walked to grey ball 1 and now face it. You picked it up.\n{VIEW_AFTER_PICKUP}"
    )
    assert steps[2].observation == (
        f"You have not seen any red ball 7.\n{VIEW_AFTER_PICKUP}"
    )
    assert steps[3].observation.startswith(
        "You put grey ball 1 down in front of you.\nYou see grey ball 1, 1 step ahead;"
    )
    assert (
        "Directly in front of you is the grey ball 1.\nYou are carrying nothing.\n"
        'Available actions: ["turn left", "turn right", "pickup grey ball 1", '
    ) in steps[3].observation
    assert steps[4].observation.startswith(
        "You walked to red ball 1 and now face it. You completed the goal: go to the "
        'red ball.\nAvailable actions: ["turn left", '
    )
    assert [s.valid for s in steps] == [True, True, False, True, True]
    assert [s.done for s in steps] == [False] * 4 + [True]
    assert steps[4].success and steps[4].reward == pytest.approx(1 - 0.9 * 12 / 64)


def test_every_observation_ends_with_the_available_actions():
    env = make_env("babyai")
    observations = [env.reset("26")]
    lists = [env.available_actions()]
    for action in ["turn left", "jump", "check available actions", "toggle"]:
        observations.append(env.step(action).observation)
        lists.append(env.available_actions())
    observations.append(env.invalid_reply("no Action: line").observation)
    lists.append(env.available_actions())
    assert "pickup green key 1" in lists[1]
    for observation, actions in zip(observations, lists, strict=True):
        last = observation.splitlines()[-1]
        assert last == f"Available actions: {json.dumps(actions)}"


@pytest.mark.parametrize(
    ("spelling", "ours"),
    [
        ("pickup grey ball 1", "pick up grey ball 1"),
        ("go to red closed door 1", "go to red door 1"),
        ("toggle and go through red closed door 1", "toggle and go through red door 1"),
    ],
)
def test_agentgym_and_older_spellings_do_the_same(spelling, ours):
    # Task 0 starts in front of grey balls, task 5 in view of a closed red door.
    results = []
    for action in (spelling, ours):
        env = make_env("babyai")
        env.reset("0" if "ball" in spelling else "5")
        results.append(env.step(action))
    assert results[0].valid and results[0] == results[1]


def test_go_to_walks_next_to_the_object_and_faces_it():
    env = make_env("babyai")
    env.reset("1")
    result = env.step("go to blue key 1")
    world = env.world
    assert result.valid and not result.done
    assert result.observation.startswith("You walked to blue key 1 and now face it.")
    assert "Directly in front of you is the blue key 1." in result.observation
    assert world.name(world.cell(front(world.pose))) == "blue key 1"


def test_pick_up_moves_the_object_into_the_inventory():
    env = make_env("babyai")
    env.reset("1")
    result = env.step("pickup red box 1")
    assert result.observation.splitlines()[-2] == "You are carrying red box 1."
    assert env.world.name(env.world.carrying) == "red box 1"
    refused = env.step("pickup blue key 1")
    assert not refused.valid
    assert refused.observation.startswith("Your hands are full: you carry red box 1.")


def test_locked_door_needs_the_matching_key():
    # Task 26 (UnlockPickupDist) starts beside a locked green door.
    env = make_env("babyai")
    first = env.reset("26")
    pose = env.world.pose
    assert "green locked door 1, 1 step to your left" in first
    result = env.step("toggle and go through green locked door 1")
    assert not result.valid and not result.done
    assert result.observation.startswith(
        "The green locked door 1 is locked; you need a green key to open it."
    )
    assert env.world.pose == pose
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
    assert {"go to red ball 1", "pickup red ball 1", "pickup grey ball 2"} <= set(
        actions
    )
    assert "drop" not in actions and actions[-1] == "check available actions"
    listed = env.step("check available actions")
    assert listed.valid and listed.observation.startswith(
        f"You can take the following actions: {', '.join(actions)}\nYou see "
    )


def test_running_out_of_minigrid_steps_ends_without_success():
    env = make_env("babyai")
    env.reset("1")
    env.world.game.max_steps = env.world.game.step_count + 1
    result = env.step("turn left")
    assert (result.done, result.success, result.reward) == (True, False, 0.0)
    assert result.observation.startswith(
        "You turned left. Time is up: the level allows only 1 step and the goal was "
        "not completed.\nAvailable actions: ["
    )


def test_goal_line_reads_sequenced_missions_as_agentgym_shows_them():
    # Task 14 and 15 (OpenRedBlueDoorsDebug, OpenDoorsOrderN4Debug) join their parts with "then" and
    # "after you"; AgentGym shows both as "and".
    env = make_env("babyai")
    for task in ("14", "15"):
        mission = env.reset(task)
        assert env.world.game.mission != env.goal
        assert mission.splitlines()[0] == f"Your goal: {env.goal}"
        assert " then " not in env.goal and "after you" not in env.goal


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


def test_expert_actions_are_copied_from_the_listed_actions():
    env = make_env("babyai")
    for task in range(0, 90, 6):
        env.reset(str(task))
        for _ in range(20):
            if not env.running:
                break
            listed = env.available_actions()
            _, action = env.expert_action()
            assert action in listed, (task, action)
            assert env.step(action).valid


def test_resets_from_many_threads_leave_the_process_stdout_in_place():
    # Prepare: rollouts reset envs from a thread pool, as the engine does
    stdout = sys.stdout
    tasks = split_ids("babyai", "train")[:64]

    # Execute
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda task: make_env("babyai").reset(task), tasks))

    # Assert: level generation's silenced prints did not leave a buffer behind
    assert sys.stdout is stdout

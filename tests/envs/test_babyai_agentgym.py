"""BabyAI's agentgym dialect against AgentGym's own server and minigrid's rules.

The observations, rewards and ends of episodes are compared with what AgentGym's
BabyAI server answered (``fixtures/agentgym_babyai.json``, recorded by
``fixtures/record_agentgym.py``: first observations, turns and scripted runs);
the rewards with minigrid's formula ``1 - 0.9 * steps / max_steps`` worked by
hand for task 2 (``GoToRedBallNoDists``, seed 0: one room of size 8, so
``max_steps`` is 8² = 64; the red ball 4 steps ahead and 3 to the right).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from evoflow.config import ConfigError, validate_config
from evoflow.envs import EnvError, env_class, env_factory, make_env
from evoflow.envs.babyai_agentgym import AgentGymBabyAIEnv

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "agentgym_babyai.json").read_text()
)
TASKS = FIXTURE["tasks"]


def test_first_observations_are_agentgyms_byte_for_byte():
    env = AgentGymBabyAIEnv()
    differ = [
        t["data_idx"] for t in TASKS if env.reset(str(t["data_idx"])) != t["reset"]
    ]
    assert len(TASKS) == 90 and differ == []


def test_observations_after_a_turn_are_agentgyms_byte_for_byte():
    env = AgentGymBabyAIEnv()
    differ = []
    for task in TASKS:
        env.reset(str(task["data_idx"]))
        if env.step("turn left").observation != task["turn_left"]:
            differ.append(task["data_idx"])
    assert differ == []


def test_check_available_actions_is_agentgyms_answer():
    env = AgentGymBabyAIEnv()
    env.reset("0")
    env.step("turn left")
    step = env.step("please check available actions")  # any text with "check"
    assert step.observation == FIXTURE["check_after_turn_left_of_0"]
    assert (step.reward, step.done, step.valid) == (0.0, False, True)


def test_scripted_runs_are_agentgyms_step_for_step():
    # 475 steps of listed actions (walks, pickups, drops, doors; 18 episodes
    # ended): the same observation, the same done and, summed, the same reward.
    env = AgentGymBabyAIEnv()
    differ, steps = [], 0
    for run in FIXTURE["scripted"]:
        env.reset(str(run["data_idx"]))
        reward = 0.0
        for k, theirs in enumerate(run["steps"]):
            ours = env.step(theirs["action"])
            reward += ours.reward
            steps += 1
            same = (ours.observation, ours.done) == (
                theirs["observation"],
                theirs["done"],
            )
            if not same or reward != pytest.approx(theirs["reward"]):
                differ.append((run["data_idx"], k))
                break
    assert steps == 475 and differ == []


def test_goals_and_splits_are_the_default_dialects():
    ours, theirs = make_env("babyai"), AgentGymBabyAIEnv()
    assert theirs.task_ids("test") == ours.task_ids("test")
    for task in ("7", "36", "455"):
        assert theirs.reset(task).splitlines()[0] == ours.reset(task).splitlines()[0]


def test_a_walk_is_rewarded_by_minigrid_at_its_last_step():
    # Prepare
    env = AgentGymBabyAIEnv()
    env.reset("2")

    # Execute: 4 steps forward, turn right, 2 forward = 7 primitive steps
    step = env.step("go to red ball 1")

    # Assert
    assert step.reward == pytest.approx(1 - 0.9 * 7 / 64)
    assert step.done and step.success and step.valid
    text, listed = step.observation.rsplit("\n", 1)
    assert text.endswith("You are not carrying anything.\n The task is completed.")
    assert listed.startswith("Available actions: [")


def test_the_reward_is_the_last_primitive_steps_one():
    # The level succeeds when the agent faces the ball (step 7); AgentGym goes on
    # with the pickup and reports the reward of step 8.
    env = AgentGymBabyAIEnv()
    env.reset("2")
    step = env.step("pickup red ball 1")
    assert step.reward == pytest.approx(1 - 0.9 * 8 / 64)
    assert step.done and "You are carrying a red ball." in step.observation


def test_a_late_success_is_hidden_and_its_reward_repeated():
    # Prepare: 32 turns leave the agent as it started, 32 steps later.
    env = AgentGymBabyAIEnv()
    env.reset("2")
    for _ in range(32):
        assert env.step("turn left").reward == 0.0

    # Execute
    late = env.step("go to red ball 1")
    unknown = env.step("fly")
    turned = env.step("turn left")

    # Assert: 39 steps give 1 - 0.9 * 39 / 64 = 0.45 <= 0.5, so the episode goes
    # on; AgentGym keeps that reward through the refusal, the turn's is 0.
    assert late.reward == pytest.approx(1 - 0.9 * 39 / 64)
    assert not late.done and not late.success
    assert "\n The task is completed.\n" in late.observation
    assert unknown.reward == 0.0 and not unknown.valid
    assert turned.reward == pytest.approx(-late.reward) and not turned.done


def test_a_walk_stops_at_the_first_step_that_changes_nothing_in_view():
    # Task 34: AgentGym's planner walks through cells the agent has not seen; the
    # 15 planned steps turn round twice, step forward, turn and bump into a wall.
    env = AgentGymBabyAIEnv()
    env.reset("34")
    planned = env.planned_moves("go to blue closed door 1")
    step = env.step("go to blue closed door 1")
    assert len(planned) == 15 and planned[:5] == [1, 1, 2, 1, 2]
    assert env.primitive_steps == 5 and step.valid and not step.done


def test_refusals_name_the_reason_and_change_nothing():
    env = AgentGymBabyAIEnv()
    first = env.reset("26")  # facing a wall with a locked door beside it
    listed = first.splitlines()[-1]
    refusals = {
        "fly away": "The action is not recognized. Please check valid actions.",
        "move forward": "There is a barrier in front of you, you can't move forward.",
        "drop": "You cannot drop the object, as you are not carrying anything.",
        "toggle and go through green locked door 1": "You cannot toggle and go "
        "through green locked door 1, as you are not carrying a key.",
        "": "No change in state.",
    }
    for action, reason in refusals.items():
        step = env.step(action)
        assert step.observation == f"{reason}\n{listed}"
        assert not step.valid and step.reward == 0.0 and not step.done
    assert env.invalid_reply("no action").observation.splitlines()[-1] == listed


def test_the_dialect_is_chosen_by_config_and_has_no_expert():
    assert env_class("babyai", "agentgym") is AgentGymBabyAIEnv
    assert isinstance(env_factory("babyai", None, "agentgym")(), AgentGymBabyAIEnv)
    with pytest.raises(ValueError, match="maze has no 'agentgym' dialect"):
        env_class("maze", "agentgym")
    env = AgentGymBabyAIEnv()
    env.reset("0")
    with pytest.raises(EnvError, match="no expert"):
        env.expert_action()


def test_config_refuses_a_dialect_it_cannot_play():
    def config(**env):
        return {"experiment": "x", "envs": {"babyai": env}, "methods": {"local": {}}}

    validate_config(config(dialect="agentgym", demos=0))
    with pytest.raises(ConfigError, match="has no expert; set demos: 0"):
        validate_config(config(dialect="agentgym"))
    with pytest.raises(ConfigError, match="remote environment speaks"):
        validate_config(config(dialect="agentgym", demos=0,
                               remote={"url": "http://127.0.0.1:9"}))  # fmt: skip


def test_evaluation_plays_the_dialect_a_config_names():
    from evoflow.evaluate.run import evaluate_envs
    from evoflow.policy.random_choice import RandomChoicePolicy
    from evoflow.runtime import rollout_spec

    # Prepare
    config = validate_config({"experiment": "x", "methods": {"local": {}},
                              "envs": {"babyai": {"dialect": "agentgym", "demos": 0,
                                                  "test": 8}}})  # fmt: skip
    spec = rollout_spec(config, "babyai", method="random", round=0, client="babyai",
                        split="test", source="eval")  # fmt: skip

    # Execute
    [(episodes, metrics)] = evaluate_envs(
        RandomChoicePolicy(), {"babyai": replace(spec, constrain_actions=True)},
        config["envs"], width=8,
    ).values()  # fmt: skip

    # Assert: AgentGym's words reached the agent, every action was a listed one
    assert len(episodes) == 8 and metrics["episodes"] == 8
    for episode in episodes:
        first = next(m.content for m in episode.messages if m.role == "user"
                     and "Your goal:" in m.content)  # fmt: skip
        assert "The room has walls around you." in first
        assert episode.n_invalid == 0

"""Difficulty strata: what each env's strata mean, and drawing tasks from them."""

from __future__ import annotations

import pytest

from evoflow.envs import env_class, make_env, play_expert, split_ids
from evoflow.evaluate.run import eval_tasks
from evoflow.rollout.expert import expert_demos


@pytest.mark.parametrize("task", ["0", "5", "12", "24", "100", "600", "10499"])
def test_a_maze_stratum_is_the_band_of_the_experts_shortest_walk(task):
    # the expert walks a shortest path: its turn count is the distance
    walked = play_expert(make_env("maze"), task).turns
    band = next(b for b in ("1-4", "5-8", "9-15")
                if int(b.split("-")[0]) <= len(walked) <= int(b.split("-")[1]))  # fmt: skip
    assert env_class("maze").stratum(task) == f"distance {band}"


def test_wordle_strata_are_its_word_lists():
    wordle = env_class("wordle")
    assert {wordle.stratum(t) for t in split_ids("wordle", "test")} == {"vocab40"}
    assert wordle.stratum("100") == "vocab40" and wordle.stratum("10000") == "answers"


def test_a_webshop_stratum_counts_the_attributes_and_options_asked_for():
    from evoflow.envs.webshop.goals import goal_for

    for task in split_ids("webshop", "test")[:20]:
        goal = goal_for(task)
        quoted = [a for a in goal.attributes if a in goal.instruction]
        quoted += [v for _, v in goal.options if v in goal.instruction]
        assert env_class("webshop").stratum(task) == f"{len(quoted)} requirements"


def test_strata_select_tasks_and_unknown_names_are_refused_by_name():
    near = split_ids("maze", "test", strata=["distance 1-4"])
    assert near and len(near) < len(split_ids("maze", "test"))
    assert all(len(play_expert(make_env("maze"), t).turns) <= 4 for t in near)
    levels = split_ids("babyai", "train", strata=["GoToRedBall", "open"])
    assert {env_class("babyai").subset(t) for t in levels} >= {"GoToRedBall"}
    with pytest.raises(ValueError, match=r"envs.maze.strata: maze has no stratum "
                       r"'close'; its strata are \['distance 1-4'"):  # fmt: skip
        split_ids("maze", "test", strata=["close"])
    with pytest.raises(ValueError, match="served remotely"):
        split_ids("maze", "test", remote={"url": "http://x"}, strata=["distance 1-4"])


def test_demonstrations_and_test_tasks_come_from_the_strata():
    demos = expert_demos("textcraft", 4, "t", 0, strata=["depth 1"])
    assert len(demos) == 4
    assert {env_class("textcraft").stratum(d.task_id) for d in demos} == {"depth 1"}
    tested = eval_tasks("textcraft", 6, 0, strata=["depth 1"])
    assert len(tested) == 6
    assert {env_class("textcraft").stratum(t) for t in tested} == {"depth 1"}
    assert eval_tasks("textcraft", 6, 0) != tested  # the full split's mix otherwise

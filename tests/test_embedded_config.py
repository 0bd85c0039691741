"""The embedded experiment is calibrated: every evaluated task is solvable in its cap.

A turn cap shorter than the expert needs would make a test task unwinnable for
every method and hide learning; an expert demonstration longer than the cap
would teach behaviour the evaluation cuts off.
"""

import pytest

from evoflow.config import load_config
from evoflow.envs import make_env, play_expert
from evoflow.evaluate.run import eval_tasks
from evoflow.rollout.expert import expert_demos

CONFIG = load_config("config/config.yaml")
ENVS = sorted(CONFIG["envs"])


@pytest.mark.parametrize("env_name", ENVS)
def test_expert_solves_every_evaluated_task_within_the_cap(env_name):
    settings = CONFIG["envs"][env_name]
    env = make_env(env_name)
    tasks = eval_tasks(env_name, settings["test"], CONFIG["seed"],
                       strata=settings["strata"])  # fmt: skip
    assert len(tasks) == settings["test"]
    unsolved = [
        t for t in tasks if not play_expert(env, t, settings["max_turns"]).success
    ]
    assert not unsolved, (
        f"{env_name}: expert fails test tasks {unsolved} within the cap"
    )


@pytest.mark.parametrize("env_name", ENVS)
def test_demonstrations_fit_the_cap(env_name):
    settings = CONFIG["envs"][env_name]
    demos = expert_demos(env_name, settings["demos"], "embedded", CONFIG["seed"],
                         settings["max_turns"], settings["strata"])  # fmt: skip
    assert len(demos) == settings["demos"]
    assert all(d.success and d.n_turns <= settings["max_turns"] for d in demos)

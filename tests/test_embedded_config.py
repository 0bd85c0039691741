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


def test_ablations_keep_fed_se_s_training_caps():
    # Prepare: the ablation overlay as Snakemake lays it over the default
    import yaml

    overlay = yaml.safe_load(open("config/ablations.yaml"))
    fedse = CONFIG["methods"]["fedse"]["train"]

    # Execute / Assert: every ablation trains as Fed-SE does but for its rank
    for name, entry in overlay["methods"].items():
        own = {
            k: v for k, v in entry["train"].items() if k not in ("lora_r", "lora_alpha")
        }
        assert own == fedse, f"methods.{name}.train differs from Fed-SE's {fedse}"
    assert set(overlay) == {"methods"}, "the overlay changes only the methods"


def test_the_matched_control_reads_fed_se_s_budget():
    # Prepare / Execute
    matched = CONFIG["methods"]["fedit_matched"]

    # Assert
    assert matched["budget_of"] == "fedse" and "fedse" in CONFIG["methods"]


def test_the_tuning_config_differs_from_the_default_only_where_it_says():
    # Prepare
    from evoflow.config import load_config as load

    tuning = load("config/tuning/fedse.yaml")

    # Execute / Assert: same model, sampling, envs and training; validation
    # tasks, other seeds, its own methods; the default's Fed-SE among them
    for key in ("model", "generation", "envs", "train"):
        assert tuning[key] == CONFIG[key], f"{key} differs from config/config.yaml"
    assert tuning["fed"]["rounds"] == CONFIG["fed"]["rounds"]
    assert tuning["evaluation"]["split"] == "validation"
    assert CONFIG["evaluation"]["split"] == "test"
    assert tuning["seed"] != CONFIG["seed"]
    assert tuning["methods"]["fedse"] == CONFIG["methods"]["fedse"]
    for name, entry in tuning["methods"].items():
        changed = {
            k
            for k, v in entry["train"].items()
            if CONFIG["methods"]["fedse"]["train"].get(k, CONFIG["train"].get(k)) != v
        }
        assert len(changed) <= 1, f"{name} changes more than one setting: {changed}"

"""The calibration sweep: its file is checked and its table is hand-verifiable."""

import pytest

from evoflow.calibration import BEGIN, END, load_sweep, write_report
from evoflow.errors import ConfigError


def sweep_file(tmp_path, trials):
    import yaml

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"base": "config/config.yaml", "results": "r.jsonl",
                                    "report": "t.md", "trials": trials}))  # fmt: skip
    return path


@pytest.mark.parametrize(
    "path",
    [
        "config/calibration.yaml",
        "config/calibration_loop.yaml",
        "config/calibration_strata.yaml",
    ],
)
def test_the_shipped_sweeps_load(path):
    sweep = load_sweep(path)
    assert sweep["base"] == "config/config.yaml" and sweep["trials"]


@pytest.mark.parametrize(
    ("trials", "message"),
    [
        ([{"name": "a"}], "needs at least 'name' and 'demos'"),
        ([{"name": "a", "demos": 1, "lr": 1}], "unknown key(s) ['lr']"),
        ([{"name": "a", "demos": 1}, {"name": "a", "demos": 2}], "used twice"),
    ],
)
def test_bad_trials_are_named(tmp_path, trials, message):
    with pytest.raises(ConfigError, match="trials") as error:
        load_sweep(sweep_file(tmp_path, trials))
    assert message in str(error.value)


def test_report_table_pools_and_keeps_the_prose(tmp_path):
    # maze 1/4 won in 2 turns each, 25 % invalid -> 2 of 8 turns;
    # wordle 3/4 won in 4 turns each, no invalid -> pooled 4/8 = 50 %, 2/24 invalid.
    record = {"trial": {"name": "t1", "demos": 2, "learning_rate": 0.003, "epochs": 2,
                        "batch_size": 1},
              "optimizer_steps": 8, "train_seconds": 12.4, "eval_seconds": 30.0,
              "metrics": {"maze": {"successes": 1, "episodes": 4, "mean_turns": 2.0,
                                   "invalid_action_rate": 0.25},
                          "wordle": {"successes": 3, "episodes": 4, "mean_turns": 4.0,
                                     "invalid_action_rate": 0.0}}}  # fmt: skip
    report = tmp_path / "calibration.md"
    report.write_text(f"# Prose before\n\n{BEGIN}\nold table\n{END}\n\nProse after.\n")
    write_report(report, [record], "config/config.yaml")
    text = report.read_text()
    assert text.startswith("# Prose before") and text.endswith("Prose after.\n")
    assert "old table" not in text
    assert (
        "| t1 | 2 | 0.003 | 2 | 1 | no | 8 | 12 | 30 | 25.0 | 75.0 | 50.0 | 8.3 | – |"
        in text
    )


def test_report_shows_the_constraint_and_exploration_successes(tmp_path):
    # explored: maze 2 of 16, wordle 0 of 16 -> "2/0 (2/32)"
    played = {
        "successes": 0,
        "episodes": 16,
        "mean_turns": 3.0,
        "invalid_action_rate": 0.0,
    }
    record = {"trial": {"name": "c", "demos": 0, "constrain_actions": True, "explore": 16},
              "optimizer_steps": 0, "train_seconds": 1.0, "eval_seconds": 2.0,
              "metrics": {"maze": {**played, "episodes": 4}, "wordle": {**played, "episodes": 4}},
              "explored": {"maze": {**played, "successes": 2}, "wordle": played}}  # fmt: skip
    write_report(tmp_path / "c.md", [record], "config/config.yaml")
    assert (
        "| c | 0 |  |  |  | yes | 0 | 1 | 2 | 0.0 | 0.0 | 0.0 | 0.0 | 2/0 (2/32) |"
        in (tmp_path / "c.md").read_text()
    )


def test_a_trial_never_plays_a_test_task(tmp_path, monkeypatch):
    # Prepare: the embedded config and a trial that evaluates and explores; no
    # model (the random reference answers), every episode start recorded
    from evoflow.calibration import run_trial
    from evoflow.config import load_config
    from evoflow.envs import split_ids
    from evoflow.policy.random_choice import RandomChoicePolicy
    from evoflow.rollout import engine

    config = load_config("config/config.yaml")
    config["envs"] = {e: {**v, "test": 6} for e, v in config["envs"].items()
                      if e != "webshop"}  # its free search query needs a model  # fmt: skip
    played, start = [], engine._start

    def record(env, job):
        played.append((job.env, job.task, job.spec.split))
        return start(env, job)

    monkeypatch.setattr(engine, "_start", record)
    monkeypatch.setattr(
        "evoflow.runtime.policy_from_config", lambda c: RandomChoicePolicy()
    )
    trial = {"name": "probe", "demos": 0, "explore": 3, "constrain_actions": True}

    # Execute
    record_ = run_trial(config, trial, threads=1, store=tmp_path)

    # Assert: every evaluated task is a validation task, none a test task
    tested = [(e, t) for e, t, split in played if split != "train"]
    assert len(tested) == 6 * len(config["envs"]) and record_["metrics"]
    for env in config["envs"]:
        test_ids = set(split_ids(env, "test"))
        validation = set(split_ids(env, "validation"))
        mine = {t for e, t, _ in played if e == env}
        assert not mine & test_ids, f"{env}: calibration played test tasks"
        assert {t for e, t in tested if e == env} <= validation

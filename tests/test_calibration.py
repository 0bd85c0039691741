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


def test_the_shipped_sweep_loads():
    sweep = load_sweep("config/calibration.yaml")
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
    assert "| t1 | 2 | 0.003 | 2 | 1 | 8 | 12 | 30 | 25.0 | 75.0 | 50.0 | 8.3 |" in text

from __future__ import annotations

import json

import pytest

from evoflow.report.tables import (
    Row,
    csv_text,
    latex,
    load_row,
    markdown,
    reference_rows,
)

SIZES = {"babyai": 90, "webshop": 200, "textcraft": 100, "maze": 25, "wordle": 25}


def row(method, title, rates):
    return Row(
        method,
        title,
        {e: round(rates[e] * SIZES[e] / 100) for e in rates},
        {e: SIZES[e] for e in rates},
    )


def test_average_is_pooled_over_all_test_tasks_not_the_column_mean():
    # Fed-SE on Qwen2.5-7B in the paper: columns 93.3/73/67/68/32, Avg 73.2
    fedse = row(
        "fedse",
        "Fed-SE",
        {
            "babyai": 93.3,
            "webshop": 73.0,
            "textcraft": 67.0,
            "maze": 68.0,
            "wordle": 32.0,
        },
    )
    assert fedse.pooled == pytest.approx(73.2, abs=0.05)
    assert sum(fedse.rate(e) for e in SIZES) / 5 == pytest.approx(
        66.7, abs=0.1
    )  # the naive mean differs


def test_table_formats_show_rates_and_gain_over_pretrained():
    rows = [
        row("pretrained", "Pre-Trained", {"maze": 32.0, "wordle": 20.0}),
        row("fedse", "Fed-SE", {"maze": 68.0, "wordle": 32.0}),
    ]
    md = markdown(rows)
    assert "| Method | Maze | Wordle | Avg |" in md
    assert "| Pre-Trained | 32.0 | 20.0 | 26.0 |" in md
    assert "| Fed-SE | 68.0 | 32.0 | 50.0 (+24.0) |" in md
    assert csv_text(rows).splitlines() == ["method,maze,wordle,avg,episodes", "pretrained,32.00,20.00,26.00,50",
                                           "fedse,68.00,32.00,50.00,50"]  # fmt: skip
    assert r"Fed-SE & 68.0 & 32.0 & 50.0 (+24.0) \\" in latex(rows)


def test_the_random_reference_leaves_unlisted_envs_empty_and_shows_no_gain():
    # Random plays maze and wordle only (WebShop's search is free text): 0 episodes
    base = row("pretrained", "Pre-Trained", {"webshop": 10.0, "maze": 32.0})
    chance = Row("random", "Random (valid actions)", {"webshop": 0, "maze": 10},
                 {"webshop": 0, "maze": 25})  # fmt: skip
    md = markdown([base, chance])
    assert "| Random (valid actions) | – | 40.0 | 40.0 |" in md


def test_paper_numbers_appear_beside_ours_for_a_paper_model():
    reference = reference_rows("Qwen/Qwen2.5-7B-Instruct")
    assert reference["fedse"]["avg"] == 73.2 and reference["pretrained"]["maze"] == 32.0
    assert reference_rows("smollm2-135m-instruct") == {}
    rows = [row("fedse", "Fed-SE", {"maze": 60.0, "wordle": 40.0})]
    assert "| Fed-SE | 68.0 | 32.0 | 73.2 |" in markdown(rows, reference)


def test_rows_load_from_metrics_files(tmp_path):
    files = []
    for env, successes in (("maze", 2), ("wordle", 1)):
        path = tmp_path / f"{env}.json"
        path.write_text(json.dumps({"env": env, "successes": successes, "episodes": 4,
                                    "mean_turns": 3.0, "invalid_action_rate": 0.0}))  # fmt: skip
        files.append(path)
    loaded = load_row("fedit", "FedIT", files)
    assert loaded.rate("maze") == 50.0 and loaded.pooled == 37.5


def test_report_lists_methods_in_table_1_order_whatever_the_config_order(tmp_path):
    from evoflow.config import load_config
    from evoflow.methods import methods_from_config
    from evoflow.report.build import build_report, report_outputs

    config = load_config("tests/configs/tiny.yaml")  # keys come back sorted
    for name, method in methods_from_config(config).items():
        for round in method.eval_rounds:
            for env in config["envs"]:
                path = tmp_path / name / f"round={round}" / "eval" / f"env={env}"
                path.mkdir(parents=True)
                metrics = {"env": env, "successes": 1, "episodes": 2,
                           "mean_turns": 4.0, "invalid_action_rate": 0.25}  # fmt: skip
                (path / "metrics.json").write_text(json.dumps(metrics))
        for round in range(1, method.final_round + 1) if method.kind.explores else ():
            for env in config["envs"]:
                path = tmp_path / name / f"round={round}" / f"client={env}"
                path.mkdir(parents=True)
                info = {"explored_successes": 1, "explored_episodes": 3}
                (path / "buffer.json").write_text(json.dumps({"info": info}))
    outputs = report_outputs(config, tmp_path / "reports")
    rows = build_report(config, tmp_path, outputs)
    expected = ["pretrained", "random", "local", "centralized", "fedit", "fedse"]
    assert [r.method for r in rows] == expected
    table = (tmp_path / "reports" / "table1.md").read_text()
    titles = [line.split("|")[1].strip() for line in table.splitlines()[2:8]]
    assert titles == ["Pre-Trained", "Random (valid actions)", "Local",
                      "Centralized", "FedIT", "Fed-SE"]  # fmt: skip
    rounds, envs = config["fed"]["rounds"], len(config["envs"])
    per_round = " → ".join([str(envs)] * rounds)  # each client found 1 of 3
    found = (
        f"| Fed-SE | 25.0 | 4.0 | {per_round} ({rounds * envs} / {3 * rounds * envs}) |"
    )
    assert found in table and "| FedIT | 25.0 | 4.0 | – |" in table


def test_behaviour_table_pools_turns_and_counts_explorations(tmp_path):
    from evoflow.report.behaviour import behaviour_markdown, explored, explored_by_round

    # maze: 4 episodes x 5 turns, 10 % invalid -> 20 turns, 2 invalid;
    # wordle: 6 episodes x 2 turns, 50 % invalid -> 12 turns, 6 invalid.
    # Pooled: 8 / 32 = 25.0 % invalid, 32 turns / 10 episodes = 3.2 turns.
    files = []
    for env, n, turns, invalid in (("maze", 4, 5.0, 0.1), ("wordle", 6, 2.0, 0.5)):
        path = tmp_path / f"{env}.json"
        path.write_text(json.dumps({"env": env, "successes": 1, "episodes": n,
                                    "mean_turns": turns, "invalid_action_rate": invalid}))  # fmt: skip
        files.append(path)
    fedse = load_row("fedse", "Fed-SE", files)
    buffers = []
    for k, (found, played) in enumerate(((1, 3), (4, 3))):
        path = tmp_path / f"round={k + 1}" / "buffer.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"shards": [], "info": {
            "explored_successes": found, "explored_episodes": played}}))  # fmt: skip
        buffers.append(path)
    assert explored(buffers) == (5, 6)
    assert explored_by_round(buffers[::-1]) == [(1, 3), (4, 3)]
    table = behaviour_markdown([fedse], {"fedse": explored_by_round(buffers)})
    assert "| Fed-SE | 25.0 | 3.2 | 1 → 4 (5 / 6) |" in table
    one_round = behaviour_markdown([fedse], {"fedse": [(5, 6)]})
    assert "| Fed-SE | 25.0 | 3.2 | 5 / 6 |" in one_round
    assert "| FedIT | 0.0 | 1.0 | – |" in behaviour_markdown(
        [Row("fedit", "FedIT", {"maze": 0}, {"maze": 2}, {"maze": 2.0}, {"maze": 0.0})],
        {},
    )


def test_by_round_table_shows_each_federated_methods_pooled_success_per_round():
    from evoflow.report.behaviour import rounds_markdown

    def row(successes, episodes):  # two envs; pooled = sum / sum
        return Row("fedse", "Fed-SE", dict(zip("ab", successes, strict=True)),
                   dict(zip("ab", episodes, strict=True)))  # fmt: skip

    # round 1: 1 of 4 + 0 of 4 = 12.5 %; round 3: 3 of 4 + 2 of 4 = 62.5 %
    curves = {"fedse": {1: row((1, 0), (4, 4)), 3: row((3, 2), (4, 4))},
              "fedit": {1: Row("fedit", "FedIT", {"a": 1}, {"a": 8})}}  # fmt: skip
    table = rounds_markdown(curves).splitlines()
    assert table[0] == "| Method | Round 1 | Round 3 |"
    assert table[2:] == ["| Fed-SE | 12.5 | 62.5 |", "| FedIT | 12.5 | – |"]


def test_caption_names_the_strata_and_the_action_constraint():
    from evoflow.config import load_config
    from evoflow.methods import methods_from_config
    from evoflow.report.build import _note

    config = load_config("config/config.yaml")
    note = _note(config, methods_from_config(config))
    assert (
        "babyai 20 of goto" in note and "maze 13 of distance 1-4 / distance 5-8" in note
    )
    assert "constrain_actions" in note

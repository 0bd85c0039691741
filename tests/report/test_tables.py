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
    header = ("method,maze,maze_k,maze_n,maze_low,maze_high,wordle,wordle_k,wordle_n,"
              "wordle_low,wordle_high,avg,avg_k,avg_n,avg_low,avg_high,episodes")  # fmt: skip
    assert csv_text(rows).splitlines() == [
        header,
        "pretrained,32.00,8,25,,,20.00,5,25,,,26.00,13,50,,,50",
        "fedse,68.00,17,25,,,32.00,8,25,,,50.00,25,50,,,50",
    ]
    assert r"Fed-SE & 68.0 & 32.0 & 50.0 (+24.0) \\" in latex(rows)


def test_the_random_reference_leaves_unlisted_envs_empty_and_shows_no_gain():
    # Random plays maze and wordle only (WebShop's search is free text): 0 episodes
    base = row("pretrained", "Pre-Trained", {"webshop": 10.0, "maze": 32.0})
    chance = Row("random", "Random (valid actions)", {"webshop": 0, "maze": 10},
                 {"webshop": 0, "maze": 25})  # fmt: skip
    md = markdown([base, chance])
    assert "| Random (valid actions) | – | 40.0 | 40.0 |" in md


def outcomes(results):
    """Outcomes from per-env lists of per-task (successes, episodes)."""
    from evoflow.report.outcomes import Outcomes

    return Outcomes({(env, f"{env}{i}"): v for env, values in results.items()
                     for i, v in enumerate(values)})  # fmt: skip


def test_cells_from_episodes_carry_their_count_and_wilson_interval():
    # Prepare: maze 8 of 20 single episodes; wordle 0 of 20
    got = outcomes({"maze": [(1, 1)] * 8 + [(0, 1)] * 12, "wordle": [(0, 1)] * 20})
    fedse = Row("fedse", "Fed-SE", {"maze": 8, "wordle": 0}, {"maze": 20, "wordle": 20},
                outcomes=got)  # fmt: skip

    # Execute
    md = markdown([fedse])
    lines = csv_text([fedse]).splitlines()

    # Assert: Wilson's 95 % interval worked by hand from its formula
    # (z = 1.96): 8/20 -> [21.9, 61.3]; 0/20 -> [0.0, 16.1]; 8/40 -> [10.5, 34.8]
    assert ("| Fed-SE | 40.0 (8/20) [21.9, 61.3] | 0.0 (0/20) [0.0, 16.1] | "
            "20.0 (8/40) [10.5, 34.8] |") in md  # fmt: skip
    assert lines[1].startswith("fedse,40.00,8,20,21.88,61.34,0.00,0,20,0.00,16.11,")


def test_a_reference_played_several_times_per_task_is_bootstrapped_over_tasks():
    # Prepare: 4 tasks of one env, each played 4 times: 4/4, 4/4, 0/4, 0/4. Its
    # 16 episodes are not 16 independent draws: the interval comes from the 4
    # tasks (bootstrap over tasks), so it is far wider than Wilson's for 8/16
    got = outcomes({"maze": [(4, 4), (4, 4), (0, 4), (0, 4)]})
    chance = Row("random", "Random", {"maze": 8}, {"maze": 16}, outcomes=got)

    # Execute
    low, high = chance.interval("maze")

    # Assert: the mean of 4 resampled 0/1 tasks: 0 and 1 each have probability
    # 1/16, so the 2.5 and 97.5 % percentiles are 0 and 100
    assert (low, high) == (0.0, 100.0)
    assert "50.0 (8/16) [0.0, 100.0]" in markdown([chance])


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


@pytest.mark.parametrize("last_round_only", [False, True])
def test_report_lists_methods_in_table_1_order_whatever_the_config_order(
    tmp_path, last_round_only
):
    from evoflow.config import load_config
    from evoflow.methods import methods_from_config
    from evoflow.report.build import build_report, report_outputs
    from evoflow.store import ShardMeta, write_shard
    from tests.helpers import make_episode

    config = load_config("tests/configs/tiny.yaml")  # keys come back sorted
    if last_round_only:  # a study's setting: one evaluation, the last round's
        config["fed"] |= {"eval_first": False, "eval_stride": config["fed"]["rounds"]}
        assert methods_from_config(config)["fedse"].eval_rounds == [2]
    meta = ShardMeta(experiment="tiny", config_hash="x", model_id="m", seed=0)
    for name, method in methods_from_config(config).items():
        for round in method.eval_rounds:
            for env in config["envs"]:
                path = tmp_path / name / f"round={round}" / "eval" / f"env={env}"
                path.mkdir(parents=True)
                metrics = {"env": env, "successes": 1, "episodes": 2, "mean_turns": 4.0,
                           "invalid_action_rate": 0.25, "stuck_rate": 0.5}  # fmt: skip
                (path / "metrics.json").write_text(json.dumps(metrics))
                episodes = [make_episode(i, env=env, task_id=f"t{i}", method=name,
                                         success=i == 0, split="test", source="eval")
                            for i in range(2)]  # fmt: skip
                write_shard(path / "episodes.parquet", episodes, meta)
        for round in range(1, method.final_round + 1) if method.kind.explores else ():
            for env in config["envs"]:
                path = tmp_path / name / f"round={round}" / f"client={env}"
                path.mkdir(parents=True)
                info = {"explored_successes": 1, "explored_episodes": 3}
                (path / "buffer.json").write_text(json.dumps({"info": info}))
    outputs = report_outputs(config, tmp_path / "reports")
    rows = build_report(config, tmp_path, outputs)
    expected = ["pretrained", "random", "local", "centralized", "fedit",
                "fedit_matched", "fedse"]  # fmt: skip
    assert [r.method for r in rows] == expected
    table = (tmp_path / "reports" / "table1.md").read_text()
    titles = [line.split("|")[1].strip() for line in table.splitlines()[2:9]]
    assert titles == ["Pre-Trained", "Random (valid actions)", "Local",
                      "Centralized", "FedIT", "FedIT, matched budget", "Fed-SE"]  # fmt: skip
    # every method solved task t0 of each env and failed t1: 1 of 2, 2 of 4 pooled
    assert "| Fed-SE | 50.0 (1/2) [9.5, 90.5] | 50.0 (1/2) [9.5, 90.5] |" in table
    # identical outcomes: no discordant task, nothing resolved
    assert "| Fed-SE − FedIT, matched budget | +0.0 | [+0.0, +0.0] | 1.000 |" in table
    pairs = (tmp_path / "reports" / "comparisons.csv").read_text().splitlines()
    assert pairs[1].startswith("fedit_matched,fedit,") and len(pairs) == 1 + 3 + 5 * 2
    rounds, envs = config["fed"]["rounds"], len(config["envs"])
    per_round = " → ".join([str(envs)] * rounds)  # each client found 1 of 3
    found = (
        f"| Fed-SE | 25.0 | 4.0 | 50.0 | {per_round} ({rounds * envs} / "
        f"{3 * rounds * envs}) |"
    )
    assert found in table and "| FedIT | 25.0 | 4.0 | 50.0 | – |" in table


def test_behaviour_table_pools_turns_and_counts_explorations(tmp_path):
    from evoflow.report.behaviour import behaviour_markdown, explored, explored_by_round

    # maze: 4 episodes x 5 turns, 10 % invalid -> 20 turns, 2 invalid, 1 stuck;
    # wordle: 6 episodes x 2 turns, 50 % invalid -> 12 turns, 6 invalid, 3 stuck.
    # Pooled: 8 / 32 = 25.0 % invalid, 32 turns / 10 episodes = 3.2 turns,
    # 4 / 10 = 40.0 % stuck.
    files = []
    for env, n, turns, invalid, stuck in (("maze", 4, 5.0, 0.1, 0.25),
                                          ("wordle", 6, 2.0, 0.5, 0.5)):  # fmt: skip
        path = tmp_path / f"{env}.json"
        path.write_text(json.dumps({"env": env, "successes": 1, "episodes": n,
                                    "mean_turns": turns, "invalid_action_rate": invalid,
                                    "stuck_rate": stuck}))  # fmt: skip
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
    assert "| Fed-SE | 25.0 | 3.2 | 40.0 | 1 → 4 (5 / 6) |" in table
    one_round = behaviour_markdown([fedse], {"fedse": [(5, 6)]})
    assert "| Fed-SE | 25.0 | 3.2 | 40.0 | 5 / 6 |" in one_round
    # metrics written before the stuck count, for every env or for one of
    # them: no cell rather than 0
    old = json.loads(files[1].read_text())
    del old["stuck_rate"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    for mixed in ([tmp_path / "old.json"], [files[0], tmp_path / "old.json"]):
        fedit = load_row("fedit", "FedIT", mixed)
        assert "| FedIT | " in (text := behaviour_markdown([fedit], {}))
        assert text.splitlines()[2].endswith("| – | – |")


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


def test_caption_names_the_split_the_evaluations_played():
    from evoflow.config import load_config
    from evoflow.methods import methods_from_config
    from evoflow.report.build import _note

    config = load_config("config/config.yaml")
    assert "Avg is pooled over all test episodes" in _note(
        config, methods_from_config(config)
    )
    config["evaluation"] = {**(config.get("evaluation") or {}), "split": "validation"}
    note = _note(config, methods_from_config(config))
    assert "on validation tasks" in note
    assert "Avg is pooled over all validation episodes" in note and " test " not in note

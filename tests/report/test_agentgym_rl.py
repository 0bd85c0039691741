"""AgentGym-RL's per-subset tables: the paper's numbers as printed, our test
tasks labelled with its subsets, and cells counted per subset."""

from __future__ import annotations

import json

import pytest

from evoflow.provenance import REPO_ROOT
from evoflow.report.agentgym_rl import (
    TABLES,
    algorithm_table,
    babyai_column,
    paper_columns,
    paper_rows,
    sciworld_column,
    subset_counts,
    subset_results,
    subset_table,
)
from evoflow.report.tables import ENV_TITLES


@pytest.mark.parametrize("env", sorted(TABLES))
def test_every_paper_row_is_the_count_weighted_mean_of_its_subsets(env):
    # The paper's Overall is pooled over its test set: with its per-subset test
    # counts every printed row must reproduce (a check of our typed copy).
    counts = subset_counts()[ENV_TITLES[env]]
    assert list(counts) == paper_columns(env)
    for model, row in paper_rows(env).items():
        pooled = sum(row[c] * n for c, n in counts.items()) / sum(counts.values())
        assert pooled == pytest.approx(row["Overall"], abs=0.011), model


def test_paper_cells_as_printed():
    assert paper_rows("sciworld")["ScalingInter-7B"]["Find"] == 88.64
    assert paper_rows("textcraft")["AgentGym-RL-7B"]["Depth3"] == 72.0
    assert paper_rows("babyai")["ScalingInter-7B"]["Overall"] == 96.67


def test_our_textcraft_test_split_has_the_papers_depth_counts():
    from evoflow.report.agentgym_rl import SUBSET_OF

    split = json.loads((REPO_ROOT / "data/splits/textcraft.json").read_text())
    episodes = [{"task_id": t, "success": False} for t in split["splits"]["test"]]
    results = subset_results("textcraft", episodes)
    assert {k: n for k, (_, n) in results.items()} == {
        "Depth1": 31, "Depth2": 41, "Depth3": 25, "Depth4": 3, "Overall": 100,
    }  # fmt: skip
    assert SUBSET_OF["textcraft"](split["splits"]["test"][0]).startswith("Depth")


@pytest.mark.parametrize(
    ("level", "column"),
    [("GoToRedBallGrey", "GoTo"), ("GoToObjDoor", "GoTo"), ("Pickup", "Pickup"),
     ("PickupLoc", "Pickup"), ("UnblockPickup", "Pickup"), ("ActionObjDoor", "AOD"),
     ("FindObjS7", "Find"), ("OneRoomS20", "Room"), ("SynthLoc", "SLoc"),
     ("SynthS5R2", "Other"), ("UnlockPickupDist", "Other"), ("Open", "Other")],
)  # fmt: skip
def test_babyai_levels_fall_in_the_papers_goal_families(level, column):
    assert babyai_column(level) == column


@pytest.mark.parametrize(
    ("task", "column"),
    [("measure-melting-point-known-substance", "Measure"), ("use-thermometer", "Measure"),
     ("test-conductivity-of-unknown-substances", "Test-Cond"), ("find-plant", "Find"),
     ("chemistry-mix-paint-tertiary-color", "Chem-Mix"),
     ("lifespan-longest-lived-then-shortest-lived", "Lifespan"), ("boil", "Other")],
)  # fmt: skip
def test_sciworld_tasks_fall_in_the_papers_families(task, column):
    assert sciworld_column(task) == column


def test_cells_count_successes_per_subset_and_pool_overall():
    split = json.loads((REPO_ROOT / "data/splits/textcraft.json").read_text())
    from evoflow.report.agentgym_rl import SUBSET_OF

    by_depth: dict[str, list[str]] = {}
    for task in split["splits"]["test"]:
        by_depth.setdefault(SUBSET_OF["textcraft"](task), []).append(task)
    # depth 1: 2 of 3 won; depth 4: 1 of 1 won -> Overall 3 of 4
    episodes = [{"task_id": t, "success": s} for t, s in
                zip(by_depth["Depth1"][:3], (True, False, True), strict=True)]  # fmt: skip
    episodes.append({"task_id": by_depth["Depth4"][0], "success": True})
    results = subset_results("textcraft", episodes)
    assert results == {"Depth1": (2, 3), "Depth4": (1, 1), "Overall": (3, 4)}
    text = subset_table("textcraft", {"Mine": results})
    assert "| Model | Depth1 (31 / 3) | Depth2 (41 / 0) |" in text
    assert "| paper: ScalingInter-7B | 100.0 | 97.6 | 76.0 | 33.3 | 91.0 |" in text
    assert (
        "| Mine | 66.7 (2/3) [20.8, 93.9] | – | – | 100.0 (1/1) [20.7, 100.0] | 75.0 (3/4) [30.1, 95.4] |"
        in text
    )


def test_other_column_only_when_ours_has_tasks_outside_the_papers_subsets():
    text = subset_table("babyai", {"Mine": {"GoTo": (1, 2), "Other": (0, 1),
                                            "Overall": (1, 3)}})  # fmt: skip
    assert (
        "Other (– / 1)" in text
        and "| Mine | 50.0 (1/2) [9.5, 90.5] | – | – | – | – | – | 0.0 (0/1) [0.0, 79.3] | 33.3 (1/3) [6.1, 79.2] |"
        in text
    )
    assert "Other" not in subset_table(
        "babyai", {"Mine": {"GoTo": (1, 2), "Overall": (1, 2)}}
    )


def test_algorithm_table_has_the_papers_rows_and_ours():
    text = algorithm_table([("Mine", "grpo", {"textcraft": 20.0, "babyai": None})])
    assert "| paper: Qwen2.5-3B-Instruct | REINFORCE++ | 28.0 | 70.0 |" in text
    assert "| Mine | GRPO | 20.0 | – |" in text

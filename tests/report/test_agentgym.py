"""AgentGym's Table 3 beside ours: metrics as the paper defines them, and the
paper's numbers as printed."""

from __future__ import annotations

import pytest

from evoflow.report.agentgym import agentgym_score, paper_table, table3_markdown

LLAMA = "meta-llama/Llama-2-7b-chat-hf"


def test_reward_envs_use_mean_reward_and_the_others_success():
    metrics = {"success_rate": 0.25, "mean_reward": 0.6}
    assert agentgym_score("babyai", metrics) == pytest.approx(60.0)
    assert agentgym_score("sciworld", metrics) == pytest.approx(60.0)
    assert agentgym_score("webshop", metrics) == pytest.approx(25.0)
    assert agentgym_score("maze", metrics) == pytest.approx(25.0)


def test_paper_numbers_are_the_printed_ones():
    # AgentGym Table 3: AgentEvol on Llama-2-Chat-7B
    paper = paper_table()
    assert paper["AgentEvol"] == {"webshop": 76.5, "textcraft": 64.0, "sciworld": 38.0,
                                  "babyai": 82.7, "maze": 12.0, "wordle": 12.0}  # fmt: skip
    assert paper["AgentTraj-L-SFT"]["sciworld"] == 74.47
    assert paper["Llama2-Chat-7B"]["babyai"] == 0.23


def test_cells_put_the_paper_beside_ours():
    rows = [("Pre-Trained", "pretrained", {"babyai": 1.5, "maze": 0.0}),
            ("AgentEvol", "agentevol", {"babyai": 40.0, "maze": 20.0}),
            ("Mine", "fedse", {"babyai": 3.0, "maze": 4.0})]  # fmt: skip
    text = table3_markdown(rows, ["babyai", "maze"], LLAMA)
    assert "| Method | BabyAI (reward) | Maze |" in text
    assert "| Pre-Trained | 1.5 (0.2) | 0.0 (0.0) |" in text
    assert "| AgentEvol | 40.0 (82.7) | 20.0 (12.0) |" in text
    assert "| Mine | 3.0 | 4.0 |" in text  # no paper row for other kinds
    other = table3_markdown(rows, ["babyai", "maze"], "smollm2-135m-instruct")
    assert "| Pre-Trained | 1.5 | 0.0 |" in other  # the paper has no such base row

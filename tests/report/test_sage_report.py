"""SAGE's tables: the paper's rows as typed from seed 001, ours beside them."""

from __future__ import annotations

import json

from evoflow.report import sage


def metrics(l1: float, overall: float) -> dict:
    return {"accuracy": {"math-L1": l1, "humaneval": 0.0},
            "problems": {"math-L1": 10, "humaneval": 4}, "overall": overall}  # fmt: skip


def test_tables_print_the_papers_rows_and_ours():
    text = sage.tables_markdown(
        {
            "Base Model (warm-up SFT)": metrics(0.3, 3 / 14),
            "SAGE": metrics(0.5, 5 / 14),
        },
        {"full": metrics(0.5, 5 / 14), "w/o critic training": metrics(0.4, 4 / 14)},
    )
    # Table 1, Qwen-2.5-3B SAGE row and Table 3's w/o-solver row, as in seed 001
    assert "| Qwen-2.5-3B-Instruct | SAGE | 68.9 | 62.4 | 16.9 | 85.5 |" in text
    assert "| w/o solver training | 67.7 | 64.3 | 9.0 | 81.2 |" in text
    assert "| method | humaneval (n=4) | math-L1 (n=10) | Overall |" in text
    # our cells: pass@1, solved/problems and Wilson's 95 % interval (z = 1.96 by
    # hand: 5 of 10 -> [23.7, 76.3])
    assert ("| SAGE | 0.0 (0/4) [0.0, 49.0] | 50.0 (5/10) [23.7, 76.3] | "
            "35.7 (5/14) [16.3, 61.2] |") in text  # fmt: skip
    assert "| w/o critic training | 0.0 (0/4) [0.0, 49.0] | 40.0 (4/10) [" in text
    assert "validation_accuracy | 80 | 65.8" in text  # Figure 3's stated points
    assert sage.tables_csv({"SAGE": metrics(0.5, 5 / 14)}).splitlines()[1:] == [
        "SAGE,math-L1,0.5000,10", "SAGE,humaneval,0.0000,4", "SAGE,overall,0.3571,14"]  # fmt: skip


def test_dynamics_reads_pool_size_per_step_and_accuracy_per_span(tmp_path):
    for span, sizes in ((1, [40, 41]), (2, [43, 43])):
        rows = [
            {"step": 2 * (span - 1) + i, "pool_size": s} for i, s in enumerate(sizes)
        ]
        if span == 2:  # span 1 is from before acceptances were counted
            rows = [r | {"critic_accepted": 3 - i, "joined": 2 - 2 * i,
                         "joined_in_template": 2 - 2 * i, "template_keys_right": 1 - i}
                    for i, r in enumerate(rows)]  # fmt: skip
        (tmp_path / f"s{span}.json").write_text(json.dumps({"steps": rows}))
    for r, acc in ((0, 0.2), (2, 0.3)):
        (tmp_path / f"e{r}.json").write_text(json.dumps({"overall": acc}))
    series = sage.dynamics([tmp_path / "s1.json", tmp_path / "s2.json"],
                           {0: tmp_path / "e0.json", 2: tmp_path / "e2.json"}, 2)  # fmt: skip
    assert series["pool"] == {1: 40, 2: 41, 3: 43, 4: 43}
    assert series["accuracy"] == {0: 20.0, 2 * 2: 30.0}
    assert (series["critic_accepted"], series["joined"]) == ({3: 3, 4: 2}, {3: 2, 4: 0})
    table = sage.acceptance_block({"SAGE": series}).splitlines()
    assert series["template_keys_right"] == {3: 1, 4: 0}
    assert table[0] == ("| method | step | Critic score >= alpha | joined the pool | "
                        "joined in a level-0 shape | of these, key right | pool |")  # fmt: skip
    assert table[2:] == ["| SAGE | 1 | – | – | – | – | 40 |",
                         "| SAGE | 2 | – | – | – | – | 41 |",
                         "| SAGE | 3 | 3 | 2 | 2 | 1 | 43 |",
                         "| SAGE | 4 | 2 | 0 | 0 | 0 | 43 |"]  # fmt: skip

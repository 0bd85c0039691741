"""SAGE's report: Table 1 and Table 3 with the paper's numbers beside ours, and
Figure 3 (pool size and validation accuracy by step).

The paper evaluates on benchmarks we cannot ship (HumanEval+, MBPP+, LCB,
GSM8K, MATH, AIME, AMC, OlympiadBench); ours are the held-out half of
HumanEval and held-out generated math by level (``evoflow.sage.data``), so the
two blocks share no column: the paper's rows are printed as they stand
(``data/reference/sage_*.csv``), ours below with our own columns. Our "Base
Model" row is the warm-up model (round 0) every SAGE method starts from.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path

from evoflow.provenance import REPO_ROOT
from evoflow.report.tables import md_row, pct

REFERENCE = REPO_ROOT / "data" / "reference"
PAPER = {"table1": REFERENCE / "sage_table1.csv", "table3": REFERENCE / "sage_table3.csv",
         "figure3": REFERENCE / "sage_figure3.csv"}  # fmt: skip


def paper_block(name: str) -> str:
    with open(PAPER[name], newline="") as fh:
        rows = list(csv.reader(fh))
    lines = [md_row(rows[0]), md_row(["---"] * len(rows[0]))]
    return "\n".join(lines + [md_row(r) for r in rows[1:]])


def our_block(results: Mapping[str, dict]) -> str:
    """``results``: row title -> evaluation metrics (``evaluate_solver``)."""
    groups = sorted({g for m in results.values() for g in m["accuracy"]})
    first = next(iter(results.values()), {"problems": {}})
    header = [
        "method",
        *(f"{g} (n={first['problems'].get(g, 0)})" for g in groups),
        "Overall",
    ]
    lines = [md_row(header), md_row(["---"] * len(header))]
    for title, m in results.items():
        cells = [
            pct(100 * m["accuracy"][g]) if g in m["accuracy"] else "–" for g in groups
        ]
        lines.append(md_row([title, *cells, pct(100 * m["overall"])]))
    return "\n".join(lines)


def tables_markdown(main: Mapping[str, dict], ablations: Mapping[str, dict]) -> str:
    text = ["## Table 1 — paper (pass@1 %, seed 001)", "", paper_block("table1"), "",
            "## Table 1 — ours (Solver pass@1 %, greedy, held-out problems)", "",
            our_block(main), ""]  # fmt: skip
    if ablations:
        text += ["## Table 3 — paper (Qwen-2.5-3B; no planner row in the paper)", "",
                 paper_block("table3"), "", "## Table 3 — ours", "",
                 our_block(ablations), ""]  # fmt: skip
    text += ["## Figure 3 — the paper's stated points", "", paper_block("figure3"), ""]
    return "\n".join(text)


def tables_csv(results: Mapping[str, dict]) -> str:
    lines = ["method,group,accuracy,problems"]
    for title, m in results.items():
        for g, value in m["accuracy"].items():
            lines.append(f"{title},{g},{value:.4f},{m['problems'][g]}")
        lines.append(
            f"{title},overall,{m['overall']:.4f},{sum(m['problems'].values())}"
        )
    return "\n".join(lines) + "\n"


def dynamics(span_metrics: list[str | Path], evaluations: Mapping[int, str | Path],
             span_steps: int) -> dict:  # fmt: skip
    """Figure 3's series of one method: pool size after each step, validation
    accuracy (%) at each evaluated round's last step."""
    pool = {}
    for path in span_metrics:
        for row in json.loads(Path(path).read_text())["steps"]:
            pool[row["step"] + 1] = row["pool_size"]
    accuracy = {round * span_steps: 100 * json.loads(Path(p).read_text())["overall"]
                for round, p in evaluations.items()}  # fmt: skip
    return {
        "pool": dict(sorted(pool.items())),
        "accuracy": dict(sorted(accuracy.items())),
    }

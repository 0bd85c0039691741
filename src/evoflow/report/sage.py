"""SAGE's report: Table 1 and Table 3 with the paper's numbers beside ours, and
Figure 3 (pool size and held-out accuracy by step; the paper calls it validation accuracy).

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

from evoflow.atomic import write_text
from evoflow.methods import Layout, Method, method_title
from evoflow.provenance import REPO_ROOT
from evoflow.report import evidence, figures
from evoflow.report.outcomes import read_outcomes
from evoflow.report.tables import count_cell, md_row

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
        cells = [_solved(m["accuracy"][g], m["problems"][g]) if g in m["accuracy"]
                 else "–" for g in groups]  # fmt: skip
        overall = _solved(m["overall"], sum(m["problems"].values()))
        lines.append(md_row([title, *cells, overall]))
    return "\n".join(lines)


def _solved(accuracy: float, problems: int) -> str:
    """pass@1 with its count and Wilson's 95 % interval (one answer a problem)."""
    return count_cell(round(accuracy * problems), problems)


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


# Per-step counts of the Challenge phase, as the span metrics name them.
COUNTS = ("critic_accepted", "joined", "joined_in_template", "template_keys_right")


def dynamics(span_metrics: list[str | Path], evaluations: Mapping[int, str | Path],
             span_steps: int) -> dict:  # fmt: skip
    """Figure 3's series of one method: pool size after each step, held-out
    accuracy (%) at each evaluated round's last step, and per step the
    questions the Critic scored at or above alpha and those that joined the
    pool, and of those the ones in a level-0 shape and with a right key (each
    absent from span metrics written before it was counted)."""
    pool = {}
    counted = {key: {} for key in COUNTS}
    for path in span_metrics:
        for row in json.loads(Path(path).read_text())["steps"]:
            step = row["step"] + 1
            pool[step] = row["pool_size"]
            for key, values in counted.items():
                if key in row:
                    values[step] = row[key]
    accuracy = {round * span_steps: 100 * json.loads(Path(p).read_text())["overall"]
                for round, p in evaluations.items()}  # fmt: skip
    return {
        "pool": dict(sorted(pool.items())),
        "accuracy": dict(sorted(accuracy.items())),
        **{key: dict(sorted(values.items())) for key, values in counted.items()},
    }


def acceptance_block(series: Mapping[str, dict]) -> str:
    """Per method and step: questions the Critic scored at or above alpha,
    those that joined the pool, of these the ones in a level-0 shape and the
    ones among them whose key is right, and the pool's size after the step."""
    header = ["method", "step", "Critic score >= alpha", "joined the pool",
              "joined in a level-0 shape", "of these, key right", "pool"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for title, s in series.items():
        for step, size in s["pool"].items():
            cells = [str(s[k].get(step, "–")) for k in COUNTS]
            lines.append(md_row([title, str(step), *cells, str(size)]))
    return "\n".join(lines)


def outcomes(methods: Mapping[str, Method], layout: Layout) -> dict:
    """(method, round) -> per-problem outcomes of every evaluated round, read
    from the evaluations' episodes (env ``sage``, task = problem id)."""
    return {(name, r): read_outcomes([layout.sage_eval(name, r, "episodes.parquet")])
            for name, m in methods.items() for r in m.eval_rounds}  # fmt: skip


def comparisons_block(compared: list, titles: Mapping[str, str]) -> str:
    """The paired comparisons of the final rounds, as the env reports print them."""
    if not compared:
        return ""
    return (
        "\n## Paired comparisons — ours (final rounds; A − B over the held-out "
        "problems both answered, in points; 95 % bootstrap interval, exact "
        "McNemar p)\n\n" + evidence.comparisons_markdown(compared, titles)
    )


def write_report(methods: Mapping[str, Method], layout: Layout, outputs,
                 seed: int = 0) -> tuple[dict, list]:  # fmt: skip
    """SAGE's tables (main and ablations), its paired comparisons and its
    dynamics figure; returns every evaluation's outcomes and the comparisons
    (the report writes them to ``outcomes.csv`` and ``comparisons.csv``)."""

    def final(name: str, m: Method) -> dict:
        path = layout.sage_eval(name, m.final_round, "metrics.json")
        return json.loads(Path(path).read_text())

    titles = {n: method_title(n, m.kind.name) for n, m in methods.items()}
    main, ablations = {}, {}
    for name, m in methods.items():
        if m.kind.name == "sage" and not main:
            path = layout.sage_eval(name, 0, "metrics.json")
            main["Base Model (warm-up SFT)"] = json.loads(Path(path).read_text())
        (main if m.kind.name == "sage" else ablations)[titles[name]] = final(name, m)
    if ablations and any(m.kind.name == "sage" for m in methods.values()):
        ablations = {"full": main[next(t for n, t in titles.items()
                                       if methods[n].kind.name == "sage")], **ablations}  # fmt: skip
    series = {}
    for name, m in methods.items():
        spans = [layout.server(name, r, "metrics.json") for r in range(1, m.rounds + 1)]
        evals = {r: layout.sage_eval(name, r, "metrics.json") for r in m.eval_rounds}
        series[titles[name]] = dynamics(spans, evals, m.options["span_steps"])
    accepted = [
        "",
        "## Questions accepted per step — ours",
        "",
        acceptance_block(series),
    ]
    evaluated = outcomes(methods, layout)
    final = {name: evaluated[(name, m.final_round)] for name, m in methods.items()}
    compared = evidence.compare(final, evidence.planned_pairs(methods), seed)
    tables = (tables_markdown(main, ablations) + "\n".join(accepted) + "\n"
              + comparisons_block(compared, titles))  # fmt: skip
    write_text(outputs["sage_tables"], tables)
    write_text(outputs["sage_tables_csv"], tables_csv({**main, **ablations}))
    figures.sage_dynamics(series, outputs["sage_dynamics"])
    return evaluated, compared

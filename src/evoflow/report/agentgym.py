"""AgentGym's Table 3 for our environments, with the paper's numbers beside ours.

AgentGym scores WebShop, TextCraft, Maze and Wordle by success rate, and BabyAI
and SciWorld by mean reward (BabyAI's discounted MiniGrid reward, SciWorld's
score / 100), all × 100. The paper's rows (``data/reference/agentgym_table3.csv``,
typed from its Table 3, Llama-2-Chat-7B fine-tuned on every weight) are printed
as they stand; nothing of them is recomputed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from evoflow.atomic import write_text
from evoflow.provenance import REPO_ROOT
from evoflow.report.tables import ENV_TITLES, md_row, pct

TABLE3 = REPO_ROOT / "data" / "reference" / "agentgym_table3.csv"
COLUMNS = {"webshop": "WS", "textcraft": "TC", "sciworld": "Sci", "babyai": "Baby",
           "maze": "MZ", "wordle": "WD"}  # fmt: skip
REWARD_ENVS = frozenset({"babyai", "sciworld"})
PAPER_ROWS = {"agenttraj_sft": "AgentTraj-SFT", "agenttraj_l_sft": "AgentTraj-L-SFT",
              "agentevol": "AgentEvol"}  # fmt: skip
# The pre-trained model's own row, for the models the paper evaluates.
BASE_ROWS = {"meta-llama/Llama-2-7b-chat-hf": "Llama2-Chat-7B",
             "meta-llama/Llama-2-13b-chat-hf": "Llama2-Chat-13B"}  # fmt: skip


def agentgym_score(env: str, metrics: Mapping) -> float:
    """One env's Table 3 number from our ``metrics.json``."""
    key = "mean_reward" if env in REWARD_ENVS else "success_rate"
    return 100.0 * float(metrics[key])


def load_scores(metric_files: Sequence[str | Path]) -> dict[str, float]:
    """Table 3 numbers per env from ``metrics.json`` files, and their mean
    (``avg``, each env weighing the same: the metrics differ by env)."""
    scores = {}
    for path in metric_files:
        metrics = json.loads(Path(path).read_text())
        scores[metrics["env"]] = agentgym_score(metrics["env"], metrics)
    if scores:
        scores["avg"] = sum(scores.values()) / len(scores)
    return scores


def paper_table(path: Path = TABLE3) -> dict[str, dict[str, float]]:
    """Table 3 rows by the paper's method label, keyed by our env names."""
    with open(path) as fh:
        return {
            row["method"]: {env: float(row[col]) for env, col in COLUMNS.items()}
            for row in csv.DictReader(fh)
        }


def paper_row_for(kind: str, model: str) -> str | None:
    """The paper's row to print beside a method of ``kind`` (None: no such row)."""
    if kind == "pretrained":
        return BASE_ROWS.get(model)
    return PAPER_ROWS.get(kind)


def table3_markdown(
    rows: Sequence[tuple[str, str, Mapping[str, float]]],
    envs: Sequence[str],
    model: str,
    paper: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    """Rows of (title, kind, {env: our score}); cells read ``ours (paper)``."""
    paper = paper_table() if paper is None else paper
    shown = [e for e in COLUMNS if e in envs] + [e for e in envs if e not in COLUMNS]
    header = ["Method", *(_heading(e) for e in shown)]
    lines = [md_row(header), md_row(["---"] * len(header))]
    for title, kind, scores in rows:
        reference = paper.get(paper_row_for(kind, model) or "", {})
        cells = [pct(scores.get(e)) + (f" ({reference[e]:.1f})" if e in reference else "")
                 for e in shown]  # fmt: skip
        lines.append(md_row([title, *cells]))
    base = BASE_ROWS.get(model)
    return (
        "\n".join(lines)
        + "\n\nAgentGym's metrics, ×100: success rate, and mean reward for BabyAI and "
        "SciWorld (score / 100). In parentheses: the paper's Table 3 (Llama-2-Chat-7B "
        "fine-tuned on every weight"
        + (f"; the Pre-Trained row is its {base}" if base else "")
        + "); ours are LoRA adapters of `"
        + model
        + "` on our test splits. The paper's D_SFT mixes a general-domain chat set "
        "into AgentTraj; ours is AgentTraj (the expert demonstrations) alone.\n"
    )


def table3_csv(rows, envs: Sequence[str]) -> str:
    lines = [",".join(["method", *envs])]
    for title, _, scores in rows:
        values = ["" if scores.get(e) is None else f"{scores[e]:.2f}" for e in envs]
        lines.append(",".join([title, *values]))
    return "\n".join(lines) + "\n"


def write_table3(rows, envs, model: str, md: str | Path, csv_path: str | Path) -> None:
    for path, text in ((md, table3_markdown(rows, envs, model)),
                       (csv_path, table3_csv(rows, envs))):  # fmt: skip
        write_text(path, text)


def _heading(env: str) -> str:
    title = ENV_TITLES.get(env, env)
    return f"{title} (reward)" if env in REWARD_ENVS else title

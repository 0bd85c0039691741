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
from evoflow.report import figures
from evoflow.report.tables import ENV_TITLES, md_row, pct
from evoflow.stats import proportion, task_mean
from evoflow.store import read_shard

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


Score = float | tuple[float, float, float]  # a score, or (score, low, high)


def load_scores(
    metric_files: Sequence[str | Path], episode_files: Sequence[str | Path] = ()
) -> dict[str, Score]:
    """Table 3 numbers per env from ``metrics.json`` files, and their mean
    (``avg``, each env weighing the same: the metrics differ by env). With the
    evaluations' ``episode_files`` (one per env, in the same order) each env's
    score comes with its 95 % interval (``score_estimate``)."""
    scores: dict[str, Score] = {}
    for path in metric_files:
        metrics = json.loads(Path(path).read_text())
        scores[metrics["env"]] = agentgym_score(metrics["env"], metrics)
    for path, metric in zip(episode_files, metric_files, strict=False):
        env = json.loads(Path(metric).read_text())["env"]
        scores[env] = score_estimate(env, path) or scores[env]
    if scores:
        values = [v[0] if isinstance(v, tuple) else v for v in scores.values()]
        scores["avg"] = sum(values) / len(values)
    return scores


def score_estimate(env: str, episodes: str | Path) -> tuple[float, float, float] | None:
    """(score, low, high) ×100 of one evaluation: Wilson's interval for a
    success rate of single episodes per task, else a bootstrap over tasks
    within the env of each task's mean reward or success (None: no episodes)."""
    rows = read_shard(episodes, ["task_id", "success", "reward"]).to_pylist()
    if not rows:
        return None
    key = "reward" if env in REWARD_ENVS else "success"
    per_task: dict[str, list[float]] = {}
    for row in rows:
        per_task.setdefault(row["task_id"], []).append(
            min(1.0, max(0.0, float(row[key])))
        )
    if key == "success" and all(len(v) == 1 for v in per_task.values()):
        p = proportion(int(sum(v[0] for v in per_task.values())), len(per_task))
        return 100 * p.rate, 100 * p.low, 100 * p.high
    means = [sum(v) / len(v) for _, v in sorted(per_task.items())]
    estimate = task_mean({env: means}, seed=0)
    return 100 * estimate.rate, 100 * estimate.low, 100 * estimate.high


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
        cells = [_score_text(scores.get(e)) + (f" ({reference[e]:.1f})" if e in reference else "")
                 for e in shown]  # fmt: skip
        lines.append(md_row([title, *cells]))
    base = BASE_ROWS.get(model)
    return (
        "\n".join(lines)
        + "\n\nAgentGym's metrics, ×100: success rate, and mean reward for BabyAI and "
        "SciWorld (score / 100); in brackets their 95 % interval (Wilson's for a "
        "success rate, else a bootstrap over test tasks). In parentheses: the "
        "paper's Table 3 (Llama-2-Chat-7B "
        "fine-tuned on every weight"
        + (f"; the Pre-Trained row is its {base}" if base else "")
        + "); ours are LoRA adapters of `"
        + model
        + "` on our test splits. The paper's D_SFT mixes a general-domain chat set "
        "into AgentTraj; ours is AgentTraj (the expert demonstrations) alone.\n"
    )


def table3_csv(rows, envs: Sequence[str]) -> str:
    """One line per method: each env's score and its interval (``_low``,
    ``_high``; empty without episodes)."""
    lines = [
        ",".join(["method", *(f"{e}{x}" for e in envs for x in ("", "_low", "_high"))])
    ]
    for title, _, scores in rows:
        values = []
        for env in envs:
            score = scores.get(env)
            if score is None:
                values += ["", "", ""]
                continue
            rate, low, high = score if isinstance(score, tuple) else (score, None, None)
            values += [
                f"{rate:.2f}",
                *("" if b is None else f"{b:.2f}" for b in (low, high)),
            ]
        lines.append(",".join([title, *values]))
    return "\n".join(lines) + "\n"


def _score_text(score: Score | None) -> str:
    if not isinstance(score, tuple):
        return pct(score)
    return f"{score[0]:.1f} [{score[1]:.1f}, {score[2]:.1f}]"


def write_table3(rows, envs, model: str, md: str | Path, csv_path: str | Path) -> None:
    for path, text in ((md, table3_markdown(rows, envs, model)),
                       (csv_path, table3_csv(rows, envs))):  # fmt: skip
        write_text(path, text)


def _heading(env: str) -> str:
    title = ENV_TITLES.get(env, env)
    return f"{title} (reward)" if env in REWARD_ENVS else title


def write_report(config, methods, rows, metric_files, outputs) -> None:
    """AgentGym's Table 3 (ours beside the paper's) and AgentEvol by iteration:
    every iterative method's score per iteration (the base agent at 0), so
    AgentEvol from the initial model and continued from the last one (Figure 5)
    share the axes, with the behaviour-cloning baselines as dashed lines."""
    envs = list(config["envs"])

    def episode_files(name: str, round: int) -> list[str]:
        return [
            f.replace("/metrics.json", "/episodes.parquet")
            for f in metric_files(name, round)
        ]

    final = {name: load_scores(metric_files(name, m.final_round),
                               episode_files(name, m.final_round))
             for name, m in methods.items()}  # fmt: skip
    table = [(row.title, m.kind.name, final[name])
             for row, (name, m) in zip(rows, methods.items(), strict=True)]  # fmt: skip
    write_table3(table, envs, config["model"]["name"],
                 outputs["table3_md"], outputs["table3_csv"])  # fmt: skip
    if "iterations" not in outputs:
        return
    titles = {
        **ENV_TITLES,
        "avg": "Mean over envs",
        **{r.method: r.title for r in rows},
    }
    curves = {name: {r: load_scores(metric_files(name, r), episode_files(name, r))
                     for r in m.eval_rounds}
              for name, m in methods.items()
              if m.kind.iterative and m.kind.family == "agentevol"}  # fmt: skip
    static = {name: final[name] for name, m in methods.items()
              if name not in curves and m.kind.family == "agentevol"}  # fmt: skip
    figures.success_curves(curves, static, [*envs, "avg"], titles, outputs["iterations"],
                           ylabel="AgentGym score", xlabel="iteration")  # fmt: skip

"""Table 1: success rate per environment and pooled average, one row per method.

The average is pooled over all evaluated test tasks (successes / episodes), as
in Fed-SE's Table 1, not the mean of the environment columns; "(+x)" is the
absolute gain over the Pre-Trained row. When the experiment's model is one the
paper reports, the paper's numbers (``data/reference/fedse_table1.csv``) are
printed beside ours.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evoflow.atomic import write_text
from evoflow.provenance import REPO_ROOT

ENV_ORDER = ("babyai", "webshop", "textcraft", "maze", "wordle", "sciworld")
ENV_TITLES = {"babyai": "BabyAI", "webshop": "WebShop", "textcraft": "TextCraft",
              "maze": "Maze", "wordle": "Wordle", "sciworld": "SciWorld",
              "doors": "Doors"}  # fmt: skip
REFERENCE = REPO_ROOT / "data" / "reference" / "fedse_table1.csv"
# Config model names whose paper results exist, and the paper's label for them.
PAPER_MODELS = {
    "Qwen/Qwen2.5-7B-Instruct": "Qwen2.5-7B",
    "meta-llama/Llama-2-7b-chat-hf": "Llama2-7B",
    "Qwen/Qwen2.5-3B-Instruct": "Qwen2.5-3B",
    "Qwen/Qwen3-1.7B": "Qwen3-1.7B",
    "Qwen/Qwen3-8B": "Qwen3-8B",
}


@dataclass(frozen=True)
class Row:
    """One method's final-round results."""

    method: str
    title: str
    successes: dict[str, int]
    episodes: dict[str, int]
    turns: dict[str, float] = field(default_factory=dict)  # turns played, per env
    invalid: dict[str, float] = field(default_factory=dict)  # invalid actions, per env

    def rate(self, env: str) -> float | None:
        n = self.episodes.get(env, 0)
        return 100.0 * self.successes[env] / n if n else None

    @property
    def pooled(self) -> float | None:
        n = sum(self.episodes.values())
        return 100.0 * sum(self.successes.values()) / n if n else None

    @property
    def invalid_pct(self) -> float | None:
        """Invalid actions as % of all turns played, pooled over envs."""
        n = sum(self.turns.values())
        return 100.0 * sum(self.invalid.values()) / n if n else None

    @property
    def mean_turns(self) -> float | None:
        n = sum(self.episodes.values())
        return sum(self.turns.values()) / n if n else None


def row_from_metrics(method: str, title: str, metrics: Mapping[str, Mapping]) -> Row:
    """A table row from per-env evaluation metrics (``metrics.json`` contents)."""
    successes, episodes, turns, invalid = {}, {}, {}, {}
    for env, m in metrics.items():
        successes[env] = int(m["successes"])
        episodes[env] = int(m["episodes"])
        turns[env] = m["mean_turns"] * episodes[env]
        invalid[env] = m["invalid_action_rate"] * turns[env]
    return Row(method, title, successes, episodes, turns, invalid)


def load_row(method: str, title: str, metric_files: Sequence[str | Path]) -> Row:
    """A table row from a method's per-env ``metrics.json`` files."""
    metrics = [json.loads(Path(path).read_text()) for path in metric_files]
    return row_from_metrics(method, title, {m["env"]: m for m in metrics})


def columns(rows: Sequence[Row]) -> list[str]:
    present = {env for row in rows for env in row.episodes}
    return [e for e in ENV_ORDER if e in present] + sorted(present - set(ENV_ORDER))


def reference_rows(model: str, path: Path = REFERENCE) -> dict[str, dict[str, float]]:
    """The paper's Table 1 rows for a model, keyed by method ({} if not reported)."""
    label = PAPER_MODELS.get(model)
    if label is None or not path.is_file():
        return {}
    with open(path) as fh:
        return {
            r["method"]: {
                k: float(v) for k, v in r.items() if k not in ("model", "method")
            }
            for r in csv.DictReader(fh)
            if r["model"] == label
        }


def _comparable(row: Row, base: Row | None) -> bool:
    """A gain over Pre-Trained is shown where both rows pool the same envs (the
    random reference plays only the envs that list their actions)."""
    if base is None or row is base or row.pooled is None or base.pooled is None:
        return False
    return {e for e, n in row.episodes.items() if n} == {
        e for e, n in base.episodes.items() if n
    }


def table_cells(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells: rates to one decimal, Avg with (+Δ)."""
    envs = columns(rows)
    base = next((r for r in rows if r.method == "pretrained"), None)
    header = ["Method", *(ENV_TITLES.get(e, e) for e in envs), "Avg"]
    body = []
    for row in rows:
        cells = [row.title] + [pct(row.rate(e)) for e in envs]
        avg = pct(row.pooled)
        if _comparable(row, base):
            avg += f" ({row.pooled - base.pooled:+.1f})"
        body.append(cells + [avg])
    return header, body


def markdown(rows: Sequence[Row], reference: Mapping[str, Mapping[str, float]] | None = None,
             note: str = "", companion: str = "") -> str:  # fmt: skip
    header, body = table_cells(rows)
    lines = [
        md_row(header),
        md_row(["---"] * len(header)),
        *(md_row(b) for b in body),
    ]
    text = "\n".join(lines) + "\n"
    if note:
        text += f"\n{note}\n"
    if companion:
        text += f"\n{companion}"
    if reference:
        envs = columns(rows)
        ref_header = ["Method (paper)", *(ENV_TITLES.get(e, e) for e in envs), "Avg"]
        ref_lines = [md_row(ref_header), md_row(["---"] * len(ref_header))]
        for row in rows:
            paper = reference.get(row.method)
            if paper:
                ref_lines.append(
                    md_row(
                        [
                            row.title,
                            *(f"{paper[e]:.1f}" for e in envs),
                            f"{paper['avg']:.1f}",
                        ]
                    )
                )
        text += (
            "\nPaper (Fed-SE, Table 1), same model:\n\n" + "\n".join(ref_lines) + "\n"
        )
    return text


def csv_text(rows: Sequence[Row]) -> str:
    envs = columns(rows)
    lines = [",".join(["method", *envs, "avg", "episodes"])]
    for row in rows:
        values = [row.method, *(_num(row.rate(e)) for e in envs), _num(row.pooled),
                  str(sum(row.episodes.values()))]  # fmt: skip
        lines.append(",".join(values))
    return "\n".join(lines) + "\n"


def latex(rows: Sequence[Row]) -> str:
    header, body = table_cells(rows)
    spec = "l" + "r" * (len(header) - 1)
    lines = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(header) + r" \\",
        "\\midrule",
    ]
    lines += [" & ".join(_tex(c) for c in cells) + r" \\" for cells in body]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_tables(rows: Sequence[Row], md: str | Path, csv_path: str | Path, tex: str | Path,
                 reference=None, note: str = "", companion: str = "") -> None:  # fmt: skip
    for path, text in ((md, markdown(rows, reference, note, companion)), (csv_path, csv_text(rows)),
                       (tex, latex(rows))):  # fmt: skip
        write_text(path, text)


def pct(value: float | None) -> str:
    """A percentage cell: one decimal, an en dash where there is nothing to show."""
    return "–" if value is None else f"{value:.1f}"


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _tex(cell: str) -> str:
    return (
        cell.replace("%", r"\%")
        .replace("&", r"\&")
        .replace("_", r"\_")
        .replace("–", "--")
    )

"""Table 1: success rate per environment and pooled average, one row per method.

The average is pooled over all evaluated test tasks (successes / episodes), as
in Fed-SE's Table 1, not the mean of the environment columns; "(+x)" is the
absolute gain over the Pre-Trained row (its interval is in the comparison
table, ``evidence``). When the experiment's model is one the paper reports, the
paper's numbers (``data/reference/fedse_table1.csv``) are printed beside ours.

Every cell built from episodes (``row_from_outcomes``) shows its rate, its count
and a 95 % interval: ``40.0 (8/20) [21.9, 61.3]``. With one episode per task it
is Wilson's score interval of k/n; where tasks were played several times (the
random reference, once per seed) it is a bootstrap over tasks within envs of
their mean success, since episodes of one task are not independent draws.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evoflow.atomic import write_text
from evoflow.provenance import REPO_ROOT
from evoflow.report.outcomes import Outcomes
from evoflow.stats import proportion, task_mean

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
    stuck: dict[str, int] = field(default_factory=dict)  # stuck episodes, per env
    outcomes: Outcomes | None = None  # per task, where the row was read from episodes

    def rate(self, env: str) -> float | None:
        n = self.episodes.get(env, 0)
        return 100.0 * self.successes[env] / n if n else None

    def interval(self, env: str | None = None) -> tuple[float, float] | None:
        """The 95 % interval (in %) of one env's rate, or of the pooled one
        (``env`` None); None where the row has no episodes behind it."""
        if self.outcomes is None:
            return None
        chosen = self.outcomes if env is None else self.outcomes.of(env)
        if not chosen.tasks:
            return None
        return rate_interval(chosen)

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
    def stuck_pct(self) -> float | None:
        """Episodes that failed repeating one action, as % of all episodes
        (None where an env's metrics predate the count)."""
        n = sum(self.episodes.values())
        if not n or set(self.stuck) != set(self.episodes):
            return None
        return 100.0 * sum(self.stuck.values()) / n

    @property
    def mean_turns(self) -> float | None:
        n = sum(self.episodes.values())
        return sum(self.turns.values()) / n if n else None


def row_from_metrics(method: str, title: str, metrics: Mapping[str, Mapping]) -> Row:
    """A table row from per-env evaluation metrics (``metrics.json`` contents)."""
    successes, episodes, turns, invalid, stuck = {}, {}, {}, {}, {}
    for env, m in metrics.items():
        successes[env] = int(m["successes"])
        episodes[env] = int(m["episodes"])
        turns[env] = m["mean_turns"] * episodes[env]
        invalid[env] = m["invalid_action_rate"] * turns[env]
        if "stuck_rate" in m:
            stuck[env] = round(m["stuck_rate"] * episodes[env])
    return Row(method, title, successes, episodes, turns, invalid, stuck)


def load_row(
    method: str,
    title: str,
    metric_files: Sequence[str | Path],
    outcomes: Outcomes | None = None,
) -> Row:
    """A table row from a method's per-env ``metrics.json`` files; with
    ``outcomes`` (its episodes, per task) its counts are the episodes' and every
    cell gets an interval."""
    metrics = [json.loads(Path(path).read_text()) for path in metric_files]
    row = row_from_metrics(method, title, {m["env"]: m for m in metrics})
    if outcomes is None:
        return row
    envs = {env: outcomes.of(env) for env in row.episodes}
    return Row(method, title, {e: o.successes for e, o in envs.items()},
               {e: o.episodes for e, o in envs.items()}, row.turns, row.invalid,
               row.stuck, outcomes)  # fmt: skip


def rate_interval(outcomes: Outcomes) -> tuple[float, float]:
    """95 % interval (in %) of the success rate behind ``outcomes``: Wilson's
    for single episodes per task, a stratified task bootstrap otherwise."""
    if not outcomes.repeated:
        p = proportion(outcomes.successes, outcomes.episodes)
        return 100.0 * p.low, 100.0 * p.high
    by_env: dict[str, list[float]] = {}
    for (env, _), value in sorted(outcomes.rates().items()):
        by_env.setdefault(env, []).append(value)
    estimate = task_mean(by_env, seed=0)
    return 100.0 * estimate.low, 100.0 * estimate.high


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
        cells = [row.title] + [cell(row, e) for e in envs]
        avg = cell(row, None)
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


def count_cell(k: int, n: int) -> str:
    """``40.0 (8/20) [21.9, 61.3]``: k of n single episodes with Wilson's
    95 % interval; an en dash for n = 0."""
    if not n:
        return pct(None)
    p = proportion(k, n)
    return f"{100 * p.rate:.1f} ({k}/{n}) [{100 * p.low:.1f}, {100 * p.high:.1f}]"


def cell(row: Row, env: str | None) -> str:
    """``40.0 (8/20) [21.9, 61.3]``: rate, count and interval of one env
    (``env`` None: pooled); a plain rate where the row has no episodes."""
    rate = row.pooled if env is None else row.rate(env)
    if rate is None:
        return pct(None)
    bounds = row.interval(env)
    if bounds is None:
        return pct(rate)
    k = sum(row.successes.values()) if env is None else row.successes[env]
    n = sum(row.episodes.values()) if env is None else row.episodes[env]
    return f"{rate:.1f} ({k}/{n}) [{bounds[0]:.1f}, {bounds[1]:.1f}]"


def csv_text(rows: Sequence[Row]) -> str:
    """One line per method: per env and pooled (``avg``) the rate in %, its
    successes, episodes and 95 % interval (``_k``, ``_n``, ``_low``, ``_high``)."""
    envs = columns(rows)
    names = [f"{e}{suffix}" for e in [*envs, "avg"] for suffix in SUFFIXES]
    lines = [",".join(["method", *names, "episodes"])]
    for row in rows:
        values = [row.method]
        for env in [*envs, None]:
            values += _csv_cells(row, env)
        values.append(str(sum(row.episodes.values())))
        lines.append(",".join(values))
    return "\n".join(lines) + "\n"


SUFFIXES = ("", "_k", "_n", "_low", "_high")


def _csv_cells(row: Row, env: str | None) -> list[str]:
    rate = row.pooled if env is None else row.rate(env)
    if rate is None:
        return [""] * len(SUFFIXES)
    k = sum(row.successes.values()) if env is None else row.successes[env]
    n = sum(row.episodes.values()) if env is None else row.episodes[env]
    bounds = row.interval(env) or (None, None)
    return [_num(rate), str(k), str(n), _num(bounds[0]), _num(bounds[1])]


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

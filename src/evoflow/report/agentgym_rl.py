"""AgentGym-RL's per-subset Tables 3–5 and its algorithm Table 6, ours beside
the paper's.

The paper reports success (%) per test subset: TextCraft by crafting depth,
BabyAI by goal family, SciWorld by task family; "Overall" is pooled over the
test set (each row reproduces as the count-weighted mean of its subsets with
``data/reference/agentgym_rl_subset_counts.csv``). Our test splits are
AgentGym's, labelled per task from the env itself:

* TextCraft: the goal's crafting depth — our 100 test goals are 31 / 41 / 25 / 3
  by depth 1–4, the paper's counts exactly.
* BabyAI: the level name — GoTo* → GoTo, Pickup* and UnblockPickup → Pickup,
  ActionObjDoor → AOD, FindObj* → Find, OneRoom* → Room, SynthLoc → SLoc. The
  paper's 90 test tasks all fall in these six families (55/15/5/5/5/5); ours
  cycle through all 40 levels, so 40 of them (Open, Unlock, PutNext, Synth,
  Boss, …) form an extra "Other" column, counted in our Overall.
* SciWorld: the task name — measure-melting-point-* and use-thermometer →
  Measure, test-conductivity* → Test-Cond, find-* → Find, chemistry-mix* →
  Chem-Mix, lifespan-* → Lifespan, the rest → Other. The paper's 200 test
  variations cover only these five families (53/83/44/5/15); ours sample all
  of SciWorld's tasks. SciWorld is scored by success (score 100), as in the
  paper, not by mean score as in AgentGym.

Each cell of ours is success % over that subset's test episodes, with the
number of episodes in the header. The paper's rows are printed as they stand.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from evoflow.provenance import REPO_ROOT
from evoflow.report.tables import ENV_TITLES, count_cell, md_row, pct
from evoflow.store.shards import read_shard

REFERENCE = REPO_ROOT / "data" / "reference"
TABLES = {"textcraft": ("Table 3", "agentgym_rl_table3_textcraft.csv"),
          "babyai": ("Table 4", "agentgym_rl_table4_babyai.csv"),
          "sciworld": ("Table 5", "agentgym_rl_table5_sciworld.csv")}  # fmt: skip
ALGORITHMS = REFERENCE / "agentgym_rl_table6_algorithms.csv"
COUNTS = REFERENCE / "agentgym_rl_subset_counts.csv"
ALGORITHM_COLUMNS = {"textcraft": "TextCraft", "babyai": "BabyAI"}
ESTIMATOR_TITLES = {"grpo": "GRPO", "reinforce_pp": "REINFORCE++", "rloo": "RLOO",
                    "ppo": "PPO", "task_relative": "Task-Relative REINFORCE++",
                    "gigpo": "GiGPO"}  # fmt: skip
# The paper's rows shown beside ours: the backbones and the paper's own agents.
PAPER_ROWS = ("Qwen2.5-3B-Instruct", "Qwen2.5-7B-Instruct", "AgentGym-RL-3B",
              "AgentGym-RL-7B", "ScalingInter-7B")  # fmt: skip
OTHER = "Other"


BABYAI_COLUMNS = (("GoTo", "GoTo"), ("Pickup", "Pickup"), ("UnblockPickup", "Pickup"),
                  ("ActionObjDoor", "AOD"), ("FindObj", "Find"), ("OneRoom", "Room"),
                  ("SynthLoc", "SLoc"))  # fmt: skip
SCIWORLD_COLUMNS = ((("measure-melting-point", "use-thermometer"), "Measure"),
                    (("test-conductivity",), "Test-Cond"), (("find-",), "Find"),
                    (("chemistry-mix",), "Chem-Mix"), (("lifespan-",), "Lifespan"))  # fmt: skip


def babyai_column(level: str) -> str:
    """Table 4's column of a BabyAI level name (``Other`` outside its families)."""
    return next((c for prefix, c in BABYAI_COLUMNS if level.startswith(prefix)), OTHER)


def sciworld_column(task_name: str) -> str:
    """Table 5's column of a ScienceWorld task name (``Other`` outside its families)."""
    return next((c for p, c in SCIWORLD_COLUMNS if task_name.startswith(p)), OTHER)


def _babyai(task_id: str) -> str:
    from evoflow.envs.babyai import level_for

    return babyai_column(level_for(task_id)[0])


def _textcraft(task_id: str) -> str:
    from evoflow.envs.textcraft import TextCraftEnv

    return "Depth" + TextCraftEnv.stratum(task_id).removeprefix("depth ")


def _sciworld(task_id: str) -> str:
    from evoflow.envs.sciworld import game_for

    return sciworld_column(game_for(task_id)[0])


SUBSET_OF: dict[str, Callable[[str], str]] = {
    "textcraft": _textcraft,
    "babyai": _babyai,
    "sciworld": _sciworld,
}


def paper_columns(env: str) -> list[str]:
    """The paper's subset columns of ``env``'s table, in its order."""
    with open(REFERENCE / TABLES[env][1]) as fh:
        header = next(csv.reader(fh))
    return [c for c in header if c not in ("group", "model", "Overall")]


def paper_rows(env: str) -> dict[str, dict[str, float]]:
    with open(REFERENCE / TABLES[env][1]) as fh:
        return {row["model"]: {k: float(v) for k, v in row.items()
                               if k not in ("group", "model")}
                for row in csv.DictReader(fh)}  # fmt: skip


def subset_counts() -> dict[str, dict[str, int]]:
    """The paper's test episodes per (env title, subset)."""
    counts: dict[str, dict[str, int]] = {}
    with open(COUNTS) as fh:
        for row in csv.DictReader(fh):
            counts.setdefault(row["env"], {})[row["subset"]] = int(row["n_test"])
    return counts


def subset_results(env: str, episodes: Sequence[Mapping]) -> dict[str, tuple[int, int]]:
    """(successes, episodes) per subset column and "Overall" (pooled)."""
    label = SUBSET_OF[env]
    wins, seen = Counter(), Counter()
    for episode in episodes:
        column = label(episode["task_id"])
        for key in (column, "Overall"):
            seen[key] += 1
            wins[key] += bool(episode["success"])
    return {key: (wins[key], seen[key]) for key in seen}


def read_results(env: str, path: str | Path) -> dict[str, tuple[int, int]]:
    """``subset_results`` of one evaluation's episodes shard."""
    return subset_results(env, read_shard(path, ["task_id", "success"]).to_pylist())


def _rate(cell: tuple[int, int] | None) -> float | None:
    return None if not cell or not cell[1] else 100.0 * cell[0] / cell[1]


def subset_table(env: str, ours: Mapping[str, Mapping[str, tuple[int, int]]]) -> str:
    """One env's table: the paper's rows, then ours (title → subset results)."""
    extra = [OTHER] if any(OTHER in r for r in ours.values()) else []
    columns = [*paper_columns(env), *extra, "Overall"]
    paper = paper_rows(env)
    counts = subset_counts()[ENV_TITLES[env]]
    mine = Counter()
    for results in ours.values():
        for key, (_, n) in results.items():
            mine[key] = max(mine[key], n)
    header = ["Model", *(f"{c} ({counts.get(c, '–')} / {mine[c]})" for c in columns)]
    lines = [md_row(header), md_row(["---"] * len(header))]
    for model in PAPER_ROWS:
        lines.append(md_row([f"paper: {model}",
                             *(pct(paper[model].get(c)) for c in columns)]))  # fmt: skip
    for title, results in ours.items():
        lines.append(
            md_row([title, *(count_cell(*results.get(c, (0, 0))) for c in columns)])
        )
    name, _ = TABLES[env]
    return (
        f"**{ENV_TITLES[env]}** (AgentGym-RL {name}; success %, ours with successes/"
        "episodes and Wilson's 95 % interval; header: paper / our test episodes)\n\n"
        + "\n".join(lines)
        + "\n"
    )


def algorithm_table(ours: Sequence[tuple[str, str, Mapping[str, float | None]]]) -> str:
    """Table 6: success by RL algorithm; ours as (title, estimator, {env: %})."""
    with open(ALGORITHMS) as fh:
        paper = list(csv.DictReader(fh))
    envs = [e for e in ALGORITHM_COLUMNS if any(e in r[2] for r in ours)]
    header = ["Model", "Algorithm", *(ALGORITHM_COLUMNS[e] for e in envs)]
    lines = [md_row(header), md_row(["---"] * len(header))]
    for row in paper:
        cells = [pct(float(row[ALGORITHM_COLUMNS[e]])) for e in envs]
        lines.append(md_row([f"paper: {row['backbone']}", row["algo"], *cells]))
    for title, estimator, values in ours:
        cells = [pct(values.get(e)) for e in envs]
        lines.append(md_row([title, ESTIMATOR_TITLES[estimator], *cells]))
    return (
        "**RL algorithms** (AgentGym-RL Table 6; success %)\n\n"
        + "\n".join(lines)
        + "\n"
    )


def tables_csv(ours: Mapping[str, Mapping[str, Mapping[str, tuple[int, int]]]]) -> str:
    """Long form of our cells: env, method, subset, successes, episodes."""
    lines = ["env,method,subset,successes,episodes"]
    for env, rows in ours.items():
        for title, results in rows.items():
            for subset, (wins, n) in results.items():
                lines.append(f"{env},{title},{subset},{wins},{n}")
    return "\n".join(lines) + "\n"

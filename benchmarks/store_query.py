"""Success rate by env × round over 1M episodes: DuckDB on shards vs a JSON scan.

Writes the same synthetic episodes twice — as zstd Parquet shards through the
store, and as AgentTraj-style JSON (one file per shard, items extended with env,
round and success, the fields the question needs) — then answers "success rate
by env × round" with DuckDB over the ``episodes`` view and with the standard
library scanning the JSON. Prints both times, the speed ratio and the size ratio.

    python benchmarks/store_query.py [--episodes 1000000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from evoflow.store import EPISODE_SCHEMA, ShardMeta, write_shard
from evoflow.store.query import connect

ENVS = ["babyai", "webshop", "textcraft", "maze", "wordle"]
MESSAGE_FIELDS = list(EPISODE_SCHEMA.field("messages").type.value_type)
METHODS = ["fedse", "fedit"]
TURNS = 3  # assistant turns per episode → 2 + 2·TURNS messages
ACTIONS = [
    "move up",
    "move down",
    "move left",
    "move right",
    "search[red mug]",
    "inventory",
]


def synthetic_shard(rng: np.random.Generator, n: int, env: str, rnd: int, method: str):
    """A table of ``n`` episodes plus the same episodes as JSON-ready dicts."""
    success = rng.random(n) < (0.2 + 0.05 * rnd)
    tasks = rng.integers(0, 10_000, n)
    actions = rng.integers(0, len(ACTIONS), (n, TURNS))
    roles, contents, losses, items = [], [], [], []
    for i in range(n):
        msgs = [
            ("system", f"You act in {env}. Answer with Thought: then Action:.", False),
            (
                "user",
                f"Task {tasks[i]}: reach the goal. You are at position {i % 97}.",
                False,
            ),
        ]
        for t in range(TURNS):
            act = ACTIONS[actions[i, t]]
            msgs.append(
                (
                    "assistant",
                    f"Thought: step {t} looks promising.\nAction: {act}",
                    True,
                )
            )
            msgs.append(
                ("user", f"Observation after '{act}': nothing changed at {t}.", False)
            )
        for role, content, loss in msgs:
            roles.append(role)
            contents.append(content)
            losses.append(loss)
        items.append(
            {
                "item_id": f"{env}_{tasks[i]}",
                "env": env,
                "round": rnd,
                "success": bool(success[i]),
                "conversations": [
                    {
                        "from": "gpt" if r == "assistant" else "human",
                        "loss": lo,
                        "value": c,
                    }
                    for r, c, lo in msgs
                ],
            }
        )
    per = 2 + 2 * TURNS
    messages = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n * per + 1, per, dtype=np.int32)),
        pa.StructArray.from_arrays(
            [
                pa.array(roles),
                pa.array(contents),
                pa.array(losses),
                *(pa.nulls(len(roles), f.type) for f in MESSAGE_FIELDS[3:]),
            ],  # schema v2: unset
            fields=MESSAGE_FIELDS,
        ),
    )
    columns = {
        "experiment": pa.array(["bench"] * n),
        "method": pa.array([method] * n),
        "round": pa.array(np.full(n, rnd, dtype=np.int32)),
        "client": pa.array([env] * n),
        "env": pa.array([env] * n),
        "task_id": pa.array(tasks.astype(str)),
        "split": pa.array(["train"] * n),
        "episode_id": pa.array([f"{method}-{rnd}-{env}-{i}" for i in range(n)]),
        "source": pa.array(["explore"] * n),
        "model_id": pa.array(["synthetic"] * n),
        "adapter_sha256": pa.nulls(n, pa.string()),
        "seed": pa.array(rng.integers(0, 2**31, n)),
        "temperature": pa.array(np.ones(n)),
        "horizon": pa.array(np.full(n, 15, dtype=np.int32)),
        "reward": pa.array(success.astype(float)),
        "success": pa.array(success),
        "n_turns": pa.array(np.full(n, TURNS, dtype=np.int32)),
        "n_invalid": pa.array(np.zeros(n, dtype=np.int32)),
        "n_tokens": pa.array(rng.integers(200, 2000, n)),
        "termination": pa.array(["done"] * n),
        "messages": messages,
        "created_at": pa.array(
            np.full(n, 1_790_000_000_000_000), pa.timestamp("us", tz="UTC")
        ),
        "group": pa.nulls(n, pa.string()),
        "sample": pa.array(np.zeros(n, dtype=np.int32)),
        "agent_role": pa.nulls(n, pa.string()),
        "extras": pa.array(["{}"] * n),
        "artifacts": pa.array([[]] * n, EPISODE_SCHEMA.field("artifacts").type),
    }
    return pa.table(columns, schema=EPISODE_SCHEMA), items


def build(workdir: Path, episodes: int, seed: int = 0) -> tuple[Path, Path]:
    results, jsondir = workdir / "results", workdir / "json"
    rng = np.random.default_rng(seed)
    layout = [(m, r, e) for m in METHODS for r in range(10) for e in ENVS]
    per_shard = episodes // len(layout)
    meta = ShardMeta(
        experiment="bench", config_hash="", model_id="synthetic", seed=seed
    )
    for k, (method, rnd, env) in enumerate(layout):
        table, items = synthetic_shard(rng, per_shard, env, rnd, method)
        write_shard(
            results
            / "bench"
            / method
            / f"round={rnd}"
            / f"client={env}"
            / "explore.parquet",
            table,
            meta,
        )
        jsondir.mkdir(parents=True, exist_ok=True)
        with open(jsondir / f"shard-{k:03d}.json", "w") as fh:
            json.dump(items, fh)
    return results, jsondir


def duckdb_answer(results: Path) -> dict[tuple[str, int], float]:
    con = connect(results)
    rows = con.sql(
        "SELECT env, round, avg(success::INT) FROM episodes GROUP BY env, round"
    ).fetchall()
    return {(env, rnd): rate for env, rnd, rate in rows}


def json_answer(jsondir: Path) -> dict[tuple[str, int], float]:
    wins: dict[tuple[str, int], int] = defaultdict(int)
    total: dict[tuple[str, int], int] = defaultdict(int)
    for path in sorted(jsondir.glob("*.json")):
        with open(path) as fh:
            for item in json.load(fh):
                key = (item["env"], item["round"])
                total[key] += 1
                wins[key] += item["success"]
    return {key: wins[key] / total[key] for key in total}


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="evoflow-bench-"))
    try:
        t0 = time.perf_counter()
        results, jsondir = build(workdir, args.episodes)
        print(f"built {args.episodes:,} episodes in {time.perf_counter() - t0:.1f} s")

        t0 = time.perf_counter()
        ours = duckdb_answer(results)
        t_duck = time.perf_counter() - t0
        t0 = time.perf_counter()
        theirs = json_answer(jsondir)
        t_json = time.perf_counter() - t0

        assert ours.keys() == theirs.keys()
        assert all(abs(ours[k] - theirs[k]) < 1e-12 for k in ours), "answers differ"
        s_parquet, s_json = size(results), size(jsondir)
        print(f"DuckDB over Parquet shards (views + query): {t_duck:.3f} s")
        print(f"stdlib json scan of AgentTraj-style JSON:   {t_json:.3f} s")
        print(f"speed ratio (json / duckdb): {t_json / t_duck:.1f}x")
        print(
            f"size: parquet {s_parquet / 2**20:.1f} MiB, "
            f"json {s_json / 2**20:.1f} MiB, ratio {s_json / s_parquet:.1f}x"
        )
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The random reference plays each test task once per seed."""

from __future__ import annotations

from evoflow.config import validate_config
from evoflow.evaluate.run import run_evaluation
from evoflow.store import read_shard


def test_each_task_is_played_once_per_sample_with_its_own_seed(tmp_path):
    # Prepare: 4 maze test tasks, 5 samples each, no model
    config = validate_config({"experiment": "x", "envs": {"maze": {"test": 4, "max_turns": 8}},
                              "methods": {"random": {}}})  # fmt: skip
    outputs = {"maze": (tmp_path / "episodes.parquet", tmp_path / "metrics.json")}

    # Execute
    metrics = run_evaluation(config, "h", "random", 0, {"maze": None}, outputs,
                             random_actions=True, samples=5)  # fmt: skip

    # Assert: 20 episodes, 5 per task, numbered 0-4, not all alike
    rows = read_shard(outputs["maze"][0], ["task_id", "sample", "messages"]).to_pylist()
    assert metrics["maze"]["episodes"] == 20
    per_task = {}
    for row in rows:
        per_task.setdefault(row["task_id"], []).append(row["sample"])
    assert len(per_task) == 4 and all(
        sorted(s) == [0, 1, 2, 3, 4] for s in per_task.values()
    )
    first = [r for r in rows if r["task_id"] == rows[0]["task_id"]]
    replies = {tuple(m["content"] for m in r["messages"] if m["role"] == "assistant")
               for r in first}  # fmt: skip
    assert len(replies) > 1  # each sample drew its own actions

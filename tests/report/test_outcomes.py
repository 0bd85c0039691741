"""Per-task outcomes read from episode shards, and their CSV round trip."""

from __future__ import annotations

import pytest

from evoflow.report.outcomes import (
    OutcomesError,
    load_outcomes_csv,
    outcomes_csv,
    read_outcomes,
)
from evoflow.store import ShardMeta, write_shard
from tests.helpers import make_episode

META = ShardMeta(experiment="x", config_hash="h", model_id="m", seed=0)


def test_a_task_played_several_times_counts_its_episodes(tmp_path):
    # Prepare: maze task a played 3 times (won twice), task b once (lost)
    episodes = [make_episode(i, env="maze", task_id=t, success=s, sample=k)
                for i, (t, s, k) in enumerate([("a", True, 0), ("a", False, 1),
                                               ("a", True, 2), ("b", False, 0)])]  # fmt: skip
    write_shard(tmp_path / "maze.parquet", episodes, META)

    # Execute
    got = read_outcomes([tmp_path / "maze.parquet"])

    # Assert
    assert got.tasks == {("maze", "a"): (2, 3), ("maze", "b"): (0, 1)}
    assert (got.successes, got.episodes, got.repeated) == (2, 4, True)
    assert got.rates() == {("maze", "a"): pytest.approx(2 / 3), ("maze", "b"): 0.0}


def test_outcomes_survive_their_csv(tmp_path):
    # Prepare
    from evoflow.report.outcomes import Outcomes

    first = Outcomes({("maze", "a"): (1, 1), ("wordle", "w"): (3, 20)})
    path = tmp_path / "outcomes.csv"

    # Execute
    path.write_text(outcomes_csv({("fedse", 5): first, ("random", 0): first}))
    back = load_outcomes_csv(path)

    # Assert
    assert back == {("fedse", 5): first, ("random", 0): first}
    assert path.read_text().splitlines()[1] == "fedse,5,maze,a,1,1"


def test_a_broken_outcomes_file_is_named(tmp_path):
    path = tmp_path / "outcomes.csv"
    with pytest.raises(OutcomesError, match="no such file"):
        load_outcomes_csv(path)
    path.write_text("method,round,env,task,successes,episodes\nfedse,1,maze,a,2,1\n")
    with pytest.raises(
        OutcomesError, match=r"outcomes.csv:2: successes/episodes \(2, 1\)"
    ):
        load_outcomes_csv(path)

from __future__ import annotations

from evoflow.train.run import buffer_counts
from tests.helpers import make_episode


def test_buffer_counts_separate_explored_successes_from_demos():
    # Prepare: 2 successful demos, 1 failed demo, 1 explored success, 2 failures
    kinds = [
        ("expert", True),
        ("expert", True),
        ("expert", False),
        ("explore", True),
        ("explore", False),
        ("explore", False),
    ]
    episodes = [
        make_episode(i, source=source, success=success)
        for i, (source, success) in enumerate(kinds)
    ]

    # Execute
    counts = buffer_counts(episodes)

    # Assert
    assert counts == {
        "buffer_episodes": 6,
        "buffer_successes": 3,
        "buffer_explored_successes": 1,
    }


def test_a_matched_budget_takes_exactly_the_other_jobs_steps(tmp_path):
    # Prepare: a two-episode manifest, and another job that took 5 steps
    import json

    import pytest

    from evoflow.store import ShardMeta, write_shard
    from evoflow.store.manifest import write_shards_manifest
    from evoflow.train.run import budget_steps, train_from_manifest

    meta = ShardMeta(experiment="x", config_hash="h", model_id="m", seed=0)
    write_shard(tmp_path / "demos.parquet", [make_episode(i, source="expert")
                                             for i in range(2)], meta)  # fmt: skip
    write_shards_manifest(tmp_path / "m.json", [tmp_path / "demos.parquet"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "training.json").write_text(json.dumps({"optimizer_steps": 5}))
    sft = {"steps": 2, "explored_steps": 1, "batch_size": 1, "max_length": 256}

    # Execute
    summary = train_from_manifest(tmp_path / "m.json", "tiny-random-llama",
                                  tmp_path / "out", sft, progress=False,
                                  budget=other)  # fmt: skip

    # Assert: 5 steps cycled over the two episodes, whatever steps said
    assert summary["optimizer_steps"] == 5 and summary["budget_steps"] == 5
    assert summary["budget_from"] == str(other)
    assert "explored_steps" not in summary["config"]
    (other / "training.json").write_text(json.dumps({"optimizer_steps": 0}))
    with pytest.raises(ValueError, match="optimizer_steps must be a positive integer"):
        budget_steps(other)
    (other / "training.json").unlink()
    with pytest.raises(ValueError, match="cannot read the job's optimizer_steps"):
        budget_steps(other)

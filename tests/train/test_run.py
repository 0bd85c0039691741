from __future__ import annotations

import pytest

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

    from evoflow.train.run import budget_steps, train_from_manifest

    manifest = write_manifest(
        tmp_path, [make_episode(i, source="expert") for i in range(2)]
    )
    other = tmp_path / "other"
    other.mkdir()
    (other / "training.json").write_text(json.dumps({"optimizer_steps": 5}))
    sft = {"steps": 2, "explored_steps": 1, "batch_size": 1, "max_length": 256}

    # Execute
    summary = train_from_manifest(manifest, "tiny-random-llama", tmp_path / "out", sft,
                                  progress=False, budget=budget_steps(other),
                                  budget_from=str(other))  # fmt: skip

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
    with pytest.raises(ValueError, match="budget must be a positive step count"):
        train_from_manifest(
            manifest, "tiny-random-llama", tmp_path / "x", sft, budget=0
        )


def write_manifest(folder, episodes):
    from evoflow.store import ShardMeta, write_shard
    from evoflow.store.manifest import write_shards_manifest

    meta = ShardMeta(experiment="x", config_hash="h", model_id="m", seed=0)
    write_shard(folder / "episodes.parquet", episodes, meta)
    write_shards_manifest(folder / "m.json", [folder / "episodes.parquet"])
    return folder / "m.json"


def long_episode(i: int):
    """An explored episode whose opening alone outgrows max_length 256 (dropped)."""
    episode = make_episode(i, source="explore")
    opening = episode.messages[1]
    long = type(opening)(opening.role, "reach the goal " * 200, opening.loss)
    return type(episode)(**{**episode.__dict__, "messages": [episode.messages[0], long,
                                                                *episode.messages[2:]]})  # fmt: skip


SCHEDULES = {  # (settings) -> steps worked by hand over 3 demos, 4 explored (1 dropped)
    # 6 trainable examples, batch 2: 3 micro-batches an epoch; 1.5 epochs -> 3 + 2
    "epochs": ({"epochs": 1.5, "batch_size": 2}, 5),
    # grad_accum 2 over 2 epochs of 6 micro-batches: 6 steps
    "accumulated": ({"epochs": 2, "batch_size": 1, "grad_accum": 2}, 6),
    # 4 steps on the demos, plus the explored 3 (capped by one epoch: 3)
    "mixed": ({"steps": 4, "explored_steps": 5, "epochs": 1, "batch_size": 1}, 7),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_planned_steps_are_the_steps_the_job_takes(tmp_path, name):
    # Prepare: 3 demos, 3 explored episodes and one too long to train
    from evoflow.train.run import planned_steps, train_from_manifest

    episodes = [make_episode(i, source="expert") for i in range(3)]
    episodes += [make_episode(i, source="explore") for i in range(3, 6)] + [
        long_episode(6)
    ]
    manifest = write_manifest(tmp_path, episodes)
    settings, steps = SCHEDULES[name]
    sft = {"max_length": 256, **settings}

    # Execute
    planned = planned_steps(manifest, "tiny-random-llama", sft)
    summary = train_from_manifest(manifest, "tiny-random-llama", tmp_path / "out", sft,
                                  progress=False)  # fmt: skip

    # Assert: the count by hand, and the count the training took
    assert summary["episodes_dropped"] == 1
    assert planned == summary["optimizer_steps"] == steps

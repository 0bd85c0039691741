"""Expert demonstrations under the experiment's turn cap."""

from __future__ import annotations

import dataclasses
import json

from evoflow.rollout.expert import expert_demos, file_demos, write_demos
from evoflow.store import read_shard, table_to_episodes


def _content(episode):
    """Everything but the wall-clock timestamp, which may tick between two calls."""
    return dataclasses.replace(episode, created_at=None)


def test_demos_never_exceed_the_turn_cap_and_are_replaced():
    # Prepare: uncapped, the expert needs 5, 6 and 9 moves on the seeded tasks
    uncapped = expert_demos("maze", 3, "t", seed=0)
    assert [e.n_turns for e in uncapped] == [5, 6, 9]

    # Execute
    capped = expert_demos("maze", 3, "t", seed=0, max_turns=4)

    # Assert: three demonstrations, each finished within 4 turns, horizon 4
    assert len(capped) == 3
    assert all(e.success and e.termination == "done" for e in capped)
    assert all(e.n_turns <= 4 and e.horizon == 4 for e in capped)
    assert not {e.task_id for e in capped} & {e.task_id for e in uncapped}
    again = expert_demos("maze", 3, "t", seed=0, max_turns=4)
    assert [_content(e) for e in again] == [_content(e) for e in capped]


def test_stored_demos_respect_a_small_cap(tmp_path):
    # Prepare
    shard = tmp_path / "demos.parquet"

    # Execute
    write_demos(shard, "maze", 2, "t", seed=0, config_hash="h", max_turns=2)

    # Assert
    stored = table_to_episodes(read_shard(shard))
    assert len(stored) == 2
    assert max(e.n_turns for e in stored) <= 2
    assert {e.horizon for e in stored} == {2}


def test_an_unreachable_cap_keeps_no_demo():
    # Execute: no WebShop purchase takes fewer than three turns
    demos = expert_demos("webshop", 2, "t", seed=0, max_turns=2)

    # Assert
    assert demos == []


def test_agenttraj_demos_longer_than_the_cap_are_left_out(tmp_path):
    # Prepare: one item of one action, one of three
    def item(idx: int, actions: int) -> dict:
        turns = [{"from": "human", "loss": None, "value": "Find it."}]
        for k in range(actions):
            turns += [
                {"from": "gpt", "loss": True, "value": f"Action: step {k}"},
                {"from": "human", "loss": None, "value": f"Now at {k}."},
            ]
        return {"item_id": f"maze_{idx}", "conversations": turns}

    path = tmp_path / "traj.json"
    path.write_text(json.dumps([item(1, 3), item(2, 1)]))

    # Execute
    kept = file_demos(str(path), "maze", 0, "t", max_turns=2)

    # Assert
    assert [(e.task_id, e.n_turns, e.horizon) for e in kept] == [("2", 1, 2)]

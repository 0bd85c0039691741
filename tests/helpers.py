"""Builders shared by tests."""

from __future__ import annotations

import datetime as dt

from evoflow.store import Episode, Message


def make_episode(i: int = 0, **overrides) -> Episode:
    """A fully populated episode whose fields all differ from their defaults."""
    values = dict(
        experiment="exp",
        method="fedse",
        round=2,
        client="maze",
        env="maze",
        task_id=str(100 + i),
        split="train",
        episode_id=f"ep-{i}",
        source="explore",
        model_id="tiny-llama",
        adapter_sha256="ab" * 32,
        seed=1234 + i,
        temperature=1.0,
        horizon=15,
        reward=0.5 + i,
        success=i % 2 == 0,
        n_turns=3,
        n_invalid=1,
        n_tokens=321 + i,
        termination="max_turns",
        messages=[
            Message("system", "You move through a maze."),
            Message("user", f"Task {i}: reach the goal."),
            Message("assistant", "Thought: go down.\nAction: move down", True),
            Message("user", "You moved down.", False),
        ],
        created_at=dt.datetime(2026, 11, 22, 10, 0, i % 60, tzinfo=dt.UTC),
    )
    values.update(overrides)
    return Episode(**values)

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

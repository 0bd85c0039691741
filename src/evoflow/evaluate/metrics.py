"""Per-run metrics from evaluated episodes."""

from __future__ import annotations

from collections import Counter

from evoflow.store.schema import Episode


def episode_metrics(episodes: list[Episode]) -> dict:
    """Success rate, mean reward, mean turns, invalid-action rate and more.

    The invalid-action rate is unusable or rejected actions over all turns.
    """
    n = len(episodes)
    turns = sum(e.n_turns for e in episodes)
    return {
        "episodes": n,
        "successes": sum(e.success for e in episodes),
        "success_rate": sum(e.success for e in episodes) / n if n else 0.0,
        "mean_reward": sum(e.reward for e in episodes) / n if n else 0.0,
        "mean_turns": turns / n if n else 0.0,
        "invalid_action_rate": sum(e.n_invalid for e in episodes) / turns
        if turns
        else 0.0,
        "mean_tokens": sum(e.n_tokens for e in episodes) / n if n else 0.0,
        "terminations": dict(sorted(Counter(e.termination for e in episodes).items())),
    }

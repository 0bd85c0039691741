"""Per-run metrics from evaluated episodes."""

from __future__ import annotations

from collections import Counter

from evoflow.rollout.react import parse_reply
from evoflow.store.schema import Episode

STUCK_TURNS = 3  # a failed episode's last turns that, all one action, count as stuck


def episode_metrics(episodes: list[Episode]) -> dict:
    """Success rate, mean reward, mean turns, invalid-action rate and more.

    The invalid-action rate is unusable or rejected actions over all turns; the
    stuck rate is the share of episodes that failed repeating one action
    (``stuck_repeating``).
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
        "stuck_rate": sum(map(stuck_repeating, episodes)) / n if n else 0.0,
        "mean_tokens": sum(e.n_tokens for e in episodes) / n if n else 0.0,
        "terminations": dict(sorted(Counter(e.termination for e in episodes).items())),
    }


def stuck_repeating(episode: Episode, turns: int = STUCK_TURNS) -> bool:
    """Whether ``episode`` failed with one and the same action on each of its
    last ``turns`` turns: the agent stuck in a loop (``get 4 brick`` until the
    turn cap). The action is a ReAct reply's ``Action:`` line, or the whole
    reply where it has none (other reply formats, unusable replies)."""
    if episode.success:
        return False
    replies = [m.content for m in episode.messages if m.role == "assistant"][-turns:]
    return len(replies) == turns and len({_action(r) for r in replies}) == 1


def _action(reply: str) -> str:
    action = parse_reply(reply).action
    return action if action is not None else reply.strip()

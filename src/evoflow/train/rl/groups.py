"""Groups of samples: the samples one task got in a step, GRPO's and RLOO's
unit, what dynamic sampling keeps (groups whose rewards differ), and GiGPO's
anchor states (the steps of a group that start from the same observation)."""

from __future__ import annotations

from evoflow.store.schema import Episode


def first_groups(episodes: list[Episode], count: int) -> list[Episode]:
    """The episodes of the first ``count`` groups, in the order they appear."""
    kept: list[str] = []
    for e in episodes:
        if group_key(e) not in kept and len(kept) < count:
            kept.append(group_key(e))
    return [e for e in episodes if group_key(e) in kept]


def mixed_groups(episodes: list[Episode]) -> list[Episode]:
    """The episodes of groups (samples of one task) whose rewards are not all equal."""
    rewards: dict[str, set[float]] = {}
    for e in episodes:
        rewards.setdefault(group_key(e), set()).add(e.reward)
    return [e for e in episodes if len(rewards[group_key(e)]) > 1]


def group_key(episode: Episode) -> str:
    return f"{episode.env}:{episode.task_id}"


def zero_variance_share(episodes: list[Episode]) -> float:
    """Share of the step's groups whose samples all got the same reward."""
    groups = {group_key(e) for e in episodes}
    flat = groups - {group_key(e) for e in mixed_groups(episodes)}
    return round(len(flat) / max(1, len(groups)), 4)


ANCHOR_STATES = ("observation", "history")  # what makes two steps one state


def anchor_states(episode: Episode, key: str = "observation") -> list[str]:
    """GiGPO's anchor state of each of the episode's steps (its assistant
    turns that train). ``observation`` (GiGPO's): the text the agent answered,
    the message before. ``history``: every message before the step — for envs
    whose latest observation does not fix the state (Wordle's feedback on one
    guess says nothing of the guesses before it)."""
    if key not in ANCHOR_STATES:
        raise ValueError(f"anchor state must be one of {', '.join(ANCHOR_STATES)}, "
                         f"got {key!r}")  # fmt: skip
    states, before, last = [], [], ""
    for message in episode.messages:
        if message.role == "assistant" and message.loss is not False:
            states.append(last if key == "observation" else "\x1e".join(before))
        if message.role != "assistant":
            last = message.content
        before.append(message.content)
    return states

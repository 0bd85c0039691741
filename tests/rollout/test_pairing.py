"""Methods are paired: one task played by one policy samples alike whatever
the method's name, and differently for another sample or round."""

from __future__ import annotations

from dataclasses import replace

from evoflow.envs import env_factory
from evoflow.policy.random_choice import RandomChoicePolicy
from evoflow.rollout.engine import Job, RolloutSpec, play


def replies(method: str, round: int = 1, sample: int = 0) -> list[tuple[str, ...]]:
    spec = RolloutSpec(experiment="x", method=method, split="train", source="explore",
                       round=round, client="maze", seed=7, horizon=6,
                       constrain_actions=True)  # fmt: skip
    jobs = [Job("maze", t, sample, replace(spec)) for t in ("100", "101", "102")]
    episodes = play(RandomChoicePolicy(), {"maze": env_factory("maze")}, jobs, 8,
                    progress=False)  # fmt: skip
    return [
        tuple(m.content for m in e.messages if m.role == "assistant") for e in episodes
    ]


def test_the_methods_name_does_not_change_what_is_sampled():
    # Execute
    fedse, ablation = replies("fedse"), replies("fedse_no_filter")

    # Assert: identical episodes; another sample or round draws other ones
    assert fedse == ablation
    assert replies("fedse", sample=1) != fedse
    assert replies("fedse", round=2) != fedse

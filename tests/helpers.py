"""Builders shared by tests."""

from __future__ import annotations

import datetime as dt
import os

from evoflow.store import Episode, Message
from evoflow.store.schema import Artifact

TRUTHY = ("1", "true", "yes", "on")


def service_required(variable: str) -> bool:
    """Whether tests that need a real service must fail, not skip, without it.

    True when ``variable`` (e.g. ``EVOFLOW_REQUIRE_SLURM``) is 1, or on CI: a
    truthy ``CI`` variable, which CI services set (``CI=true``).
    """
    flag = os.environ.get(variable, "")
    ci = os.environ.get("CI", "").strip().lower()
    return flag == "1" or ci in TRUTHY


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
            Message(
                "assistant",
                "Thought: go down.\nAction: move down",
                True,
                token_ids=[40, 41, 2],
                logprobs=[-0.5, -1.25, -0.0625],
                reward=0.5,
                valid=True,
            ),  # fmt: skip
            Message("user", "You moved down.", False),
        ],
        created_at=dt.datetime(2026, 11, 22, 10, 0, i % 60, tzinfo=dt.UTC),
        group=f"maze/{100 + i}",
        sample=i + 1,
        agent_role="solver",
        extras={"plan_score": 0.25 * i, "tags": ["a"]},
        artifacts=[Artifact("main.py", f"code/{i}/main.py", "cd" * 32)],
    )
    values.update(overrides)
    return Episode(**values)


def require_java() -> None:
    """Skip a SciWorld test where Java or scienceworld is missing, printing why;
    on CI (or with EVOFLOW_REQUIRE_JAVA=1) fail instead."""
    import pytest

    from evoflow.envs.sciworld_sim import SimulatorUnavailable, check_available

    try:
        check_available()
    except SimulatorUnavailable as exc:
        if service_required("EVOFLOW_REQUIRE_JAVA"):
            pytest.fail(f"the SciWorld tests must run here but {exc}")
        pytest.skip(str(exc))

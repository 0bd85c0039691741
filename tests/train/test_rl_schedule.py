"""ScalingInter-RL horizons by step, against AgentGym-RL's BabyAI schedule."""

from __future__ import annotations

import pytest

from evoflow.train.rl.schedule import HorizonSchedule


def test_babyai_schedule_raises_the_horizon_every_100_steps_then_holds():
    schedule = HorizonSchedule((6, 13, 20), phase_steps=100)
    assert [schedule.horizon(s) for s in (0, 99, 100, 199, 200, 5_000)] == [
        6, 6, 13, 13, 20, 20]  # fmt: skip


def test_a_single_horizon_is_the_fixed_baseline():
    assert {HorizonSchedule((15,)).horizon(s) for s in range(0, 1000, 37)} == {15}


@pytest.mark.parametrize(
    "horizons, steps, problem",
    [
        ((), 100, "positive"),
        ((6, 6), 100, "increase"),
        ((10, 5), 100, "increase"),
        ((0, 5), 100, "positive"),
        ((5,), 0, "phase_steps"),
    ],  # fmt: skip
)
def test_bad_schedules_are_named(horizons, steps, problem):
    with pytest.raises(ValueError, match=problem):
        HorizonSchedule(horizons, phase_steps=steps)

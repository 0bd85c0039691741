"""ScalingInter-RL: the interaction horizon (max turns) as a function of the step.

AgentGym-RL raises the turn budget in phases: horizons ``h_1 < h_2 < … < h_n``,
each held for ``phase_steps`` training steps, the last one kept to the end
(its scripts: BabyAI [6, 13, 20] every 100 steps; TextCraft and SciWorld
[10, 20, 30]). The phase is a function of the global step alone, so a resumed
run picks up the horizon it would have had. A single horizon is the
fixed-horizon baseline.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HorizonSchedule:
    horizons: tuple[int, ...]
    phase_steps: int = 100

    def __post_init__(self) -> None:
        if not self.horizons or any(h < 1 for h in self.horizons):
            raise ValueError(
                f"horizons must be positive turn counts, got {self.horizons}"
            )
        if any(b <= a for a, b in zip(self.horizons, self.horizons[1:], strict=False)):
            raise ValueError(f"horizons must increase, got {list(self.horizons)}")
        if self.phase_steps < 1:
            raise ValueError(f"phase_steps must be >= 1, got {self.phase_steps}")

    def phase(self, step: int) -> int:
        """Index of the phase that training step ``step`` (0-based) is in."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        return min(step // self.phase_steps, len(self.horizons) - 1)

    def horizon(self, step: int) -> int:
        """Max turns of the episodes rolled out at training step ``step``."""
        return self.horizons[self.phase(step)]

"""SAGE's role rewards (seed 001, Eq. 2, 4-6, 8, 11, 13), all in [0, 1].

Choices where the paper is silent or self-contradictory (SPEC-wave2 §3.2):

- ``norm``: the paper's Norm(s) is s on [0, 1], (s - 1)/9 on (1, 10] and 0.5
  otherwise — so a Critic's worst score, 1, maps to the best, 1.0. ``"paper"``
  keeps that; ``"fixed"`` (our default) reads every score as the 1-10 scale,
  (s - 1)/9 on [1, 10], 0.5 otherwise. Both give 0.5 for a missing score.
- the format score r_f: each required tag earns 1 when it appears exactly once
  with content, 0.5 when repeated, 0 when missing or empty; r_f is their
  mean, and 0.5 for an empty output (the paper's one fixed value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NORMS = ("paper", "fixed")
ROLE_TAGS = {
    "challenger": ("question", "answer", "type"),
    "planner": ("plan",),
    "solver": ("answer",),
    "critic": ("score",),
}


@dataclass(frozen=True)
class Weights:
    """Thresholds and weights of the rewards (the paper's values)."""

    alpha: float = 0.7  # a question enters the pool when Norm(score) >= alpha
    beta: float = 0.3  # the Solver sees the plan when Norm(plan score) >= beta
    plan: float = 0.5  # Planner: plan score vs format (lambda_plan, lambda_f)
    solver: tuple[float, float, float] = (0.2, 0.6, 0.2)  # plan, correctness, format

    def __post_init__(self) -> None:
        if abs(sum(self.solver) - 1) > 1e-9 or min(self.solver) < 0:
            raise ValueError(
                f"solver weights must be >= 0 and sum to 1, got {self.solver}"
            )
        for name in ("alpha", "beta", "plan"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(
                    f"{name} must lie in [0, 1], got {getattr(self, name)}"
                )


def norm(score: float | None, mode: str = "fixed") -> float:
    """A Critic score mapped to [0, 1] (Eq. 2; see the module note on ``mode``)."""
    if mode not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {mode!r}")
    if score is None:
        return 0.5
    if mode == "paper" and 0 <= score <= 1:
        return float(score)
    low = 1 < score if mode == "paper" else 1 <= score
    return (score - 1) / 9 if low and score <= 10 else 0.5


def parse_score(text: str) -> float | None:
    """The number in a reply's ``<score>…</score>``, or None."""
    found = re.search(r"<score>\s*([-+]?\d+(?:\.\d+)?)\s*</score>", text)
    return float(found.group(1)) if found else None


def format_score(text: str, tags: tuple[str, ...]) -> float:
    """r_f: how well ``text`` keeps to its role's tags (see the module note)."""
    if not text.strip():
        return 0.5
    credit = []
    for tag in tags:
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
        filled = [b for b in bodies if b.strip()]
        credit.append(0.0 if not filled else 1.0 if len(bodies) == 1 else 0.5)
    return sum(credit) / len(credit)


def difficulty(solved: list[float]) -> float:
    """r_d = 1 - the mean verified success of the Solver's samples (Eq. 4)."""
    if not solved:
        raise ValueError("difficulty needs at least one Solver sample")
    return 1 - sum(solved) / len(solved)


def accepted(question_score: float, valid: bool, w: Weights) -> bool:
    """A question joins the pool: Norm(score) >= alpha and its verifier is valid."""
    return valid and question_score >= w.alpha


def challenger(question_score: float, difficulty_: float, format_: float,
               joined: bool) -> float:  # fmt: skip
    """r_c (Eq. 5/6): with difficulty when the question joined the pool
    (accepted, and new), else score and format only."""
    if joined:
        return (question_score + difficulty_ + format_) / 3
    return (question_score + format_) / 2


def planner(plan_score: float, format_: float, w: Weights) -> float:
    """r_p = lambda_plan * s_p + (1 - lambda_plan) * r_f (Eq. 8)."""
    return w.plan * plan_score + (1 - w.plan) * format_


def plan_shown(plan_score: float, w: Weights) -> bool:
    return plan_score >= w.beta


def solver(
    correct: float, format_: float, plan_score: float | None, w: Weights
) -> float:
    """r_s (Eq. 11): the plan's score counts only when shown; without any plan
    score (planning off) correctness and format weigh half each."""
    if plan_score is None:
        return (correct + format_) / 2
    shown = plan_score if plan_shown(plan_score, w) else 0.0
    w_plan, w_correct, w_format = w.solver
    return w_plan * shown + w_correct * correct + w_format * format_


def critic(format_: float) -> float:
    """r_cr = r_f (Eq. 13): the Critic is paid for its format only."""
    return format_

"""Settings of multi-turn RL on a LoRA (defaults from AgentGym-RL, App. B and its
veRL configs)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from evoflow.train.rl_advantages import ESTIMATORS


@dataclass
class RLConfig:
    """How to train a LoRA policy with outcome rewards over multi-turn episodes.

    Defaults follow AgentGym-RL: GRPO, lr 1e-6, 8 samples per task at
    temperature 1.0, KL to the reference (the base model, the adapter disabled)
    as a low-variance loss term (as veRL's GRPO) with coefficient 1e-3, PPO clip 0.2, entropy
    bonus 1e-3, gradient clipping 1.0, one update epoch per batch.
    """

    # Parameters that control the algorithm
    estimator: str = field(
        default="grpo",
        metadata={"help": "Advantage estimator.", "choices": ESTIMATORS},
    )
    samples_per_task: int = field(
        default=8, metadata={"help": "Episodes per task: a GRPO/RLOO group."}
    )
    tasks_per_step: int = field(
        default=4, metadata={"help": "Tasks rolled out per training step."}
    )
    temperature: float = field(default=1.0, metadata={"help": "Rollout temperature."})
    clip: float = field(default=0.2, metadata={"help": "PPO ratio clip ε."})
    kl_coef: float = field(default=1e-3, metadata={"help": "KL-to-reference weight."})
    entropy_coef: float = field(default=1e-3, metadata={"help": "Entropy bonus."})
    gamma: float = field(default=1.0, metadata={"help": "Discount (PPO's GAE)."})
    lam: float = field(default=1.0, metadata={"help": "GAE λ (PPO)."})
    value_lr: float = field(
        default=1e-5, metadata={"help": "Learning rate of PPO's value head."}
    )
    # Parameters that control optimisation
    learning_rate: float = field(default=1e-6, metadata={"help": "Policy AdamW lr."})
    update_epochs: int = field(
        default=1, metadata={"help": "Passes over each step's rollouts."}
    )
    micro_batch: int = field(
        default=4, metadata={"help": "Sequences per forward/backward pass."}
    )
    max_grad_norm: float = field(
        default=1.0, metadata={"help": "Gradient clipping norm."}
    )
    seed: int = field(default=0, metadata={"help": "Seeds sampling and updates."})

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise ValueError(
                f"estimator must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}"
            )
        for name in (
            "samples_per_task",
            "tasks_per_step",
            "update_epochs",
            "micro_batch",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("learning_rate", "value_lr", "clip"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("kl_coef", "entropy_coef", "temperature"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not (0 < self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(
                f"need 0 < gamma <= 1 and 0 <= lam <= 1, got {self.gamma}, {self.lam}"
            )
        if self.estimator in ("grpo", "rloo") and self.samples_per_task < 2:
            raise ValueError(
                f"{self.estimator} compares samples of a task: samples_per_task must "
                f"be >= 2, got {self.samples_per_task}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

"""Settings of multi-turn RL on a LoRA (defaults from AgentGym-RL, App. B and its
veRL configs)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from evoflow.precision import PRECISIONS
from evoflow.train.rl.advantages import ESTIMATORS
from evoflow.train.rl.groups import ANCHOR_STATES
from evoflow.train.rl.reference import REFERENCES


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
        metadata={"help": "Advantage estimator.", "choices": tuple(ESTIMATORS)},
    )
    samples_per_task: int = field(
        default=8, metadata={"help": "Episodes per task: a GRPO/RLOO group."}
    )
    tasks_per_step: int = field(
        default=4, metadata={"help": "Tasks rolled out per training step."}
    )
    temperature: float = field(default=1.0, metadata={"help": "Rollout temperature."})
    dynamic_sampling: bool = field(
        default=False,
        metadata={
            "help": "Train only on groups whose rewards differ, drawing more tasks "
            "until tasks_per_step such groups (DAPO's dynamic sampling); a step "
            "with none skips the update."
        },
    )
    max_draws: int = field(
        default=4,
        metadata={
            "help": "Batches of tasks drawn per step at most (dynamic sampling)."
        },
    )
    clip: float = field(default=0.2, metadata={"help": "PPO ratio clip ε."})
    kl_coef: float = field(default=1e-3, metadata={"help": "KL-to-reference weight."})
    reference: str = field(
        default="start",
        metadata={
            "help": "KL reference: the policy RL starts from (its init adapter, "
            "or the base without one; the paper's choice) or the base model.",
            "choices": REFERENCES,
        },
    )
    entropy_coef: float = field(default=1e-3, metadata={"help": "Entropy bonus."})
    gamma: float = field(
        default=1.0,
        metadata={
            "help": "Discount (PPO's GAE; GiGPO's step returns, 0.95 in its paper)."
        },
    )
    step_weight: float = field(
        default=1.0,
        metadata={
            "help": "GiGPO's ω: weight of the step-level (anchor-state) advantage."
        },
    )
    anchor_state: dict[str, str] = field(
        default_factory=dict,
        metadata={
            "help": "GiGPO: per env, which steps count as one anchor state: "
            "observation (the default: the same observation text) or history "
            "(the same messages before the step)."
        },
    )
    lam: float = field(default=1.0, metadata={"help": "GAE λ (PPO)."})
    value_lr: float = field(
        default=1e-5, metadata={"help": "Learning rate of PPO's value head."}
    )
    value_clip: float = field(
        default=0.5, metadata={"help": "PPO value-loss clip around the old values."}
    )
    # Parameters that control the rollouts
    max_new_tokens: int = field(
        default=512, metadata={"help": "Token cap of one assistant turn."}
    )
    width: int = field(
        default=64, metadata={"help": "Episodes played at once (generation batch)."}
    )
    # Parameters that control the adapter
    lora_r: int = field(default=8, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling numerator."})
    lora_dropout: float = field(
        default=0.0,
        metadata={
            "help": "Dropout on the LoRA input (0: the sampling "
            "and training policies are the same)."
        },
    )
    target_modules: str | list[str] = field(
        default="all-linear", metadata={"help": "Modules wrapped by LoRA."}
    )
    # Parameters that control optimisation
    learning_rate: float = field(default=1e-6, metadata={"help": "Policy AdamW lr."})
    update_epochs: int = field(
        default=1, metadata={"help": "Passes over each step's rollouts."}
    )
    micro_batch: int = field(
        default=4, metadata={"help": "Sequences per forward/backward pass."}
    )
    micro_tokens: int = field(
        default=0,
        metadata={
            "help": "Tokens a forward/backward pass may read, a shared opening "
            "once (0: no limit; micro_batch still caps the sequences)."
        },
    )
    max_grad_norm: float = field(
        default=1.0, metadata={"help": "Gradient clipping norm."}
    )
    seed: int = field(default=0, metadata={"help": "Seeds sampling and updates."})
    precision: str = field(
        default="auto",
        metadata={
            "help": "Update compute dtype: auto (bf16 autocast where fast), "
            "float32 or bfloat16.",
            "choices": PRECISIONS,
        },
    )

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
            "max_new_tokens",
            "width",
            "lora_r",
            "lora_alpha",
            "max_draws",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.micro_tokens < 0:
            raise ValueError(f"micro_tokens must be >= 0, got {self.micro_tokens}")
        if not 0 <= self.lora_dropout < 1:
            raise ValueError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
        for name in ("learning_rate", "value_lr", "clip", "value_clip"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("kl_coef", "entropy_coef", "temperature", "step_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not (0 < self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(
                f"need 0 < gamma <= 1 and 0 <= lam <= 1, got {self.gamma}, {self.lam}"
            )
        if self.reference not in REFERENCES:
            raise ValueError(
                f"reference must be one of {', '.join(REFERENCES)}, got {self.reference!r}"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}"
            )
        for env, key in self.anchor_state.items():
            if key not in ANCHOR_STATES:
                raise ValueError(f"anchor_state.{env} must be one of "
                                 f"{', '.join(ANCHOR_STATES)}, got {key!r}")  # fmt: skip
        if self.estimator in ("grpo", "rloo", "gigpo") and self.samples_per_task < 2:
            raise ValueError(
                f"{self.estimator} compares samples of a task: samples_per_task must "
                f"be >= 2, got {self.samples_per_task}"
            )

    def anchor(self, env: str) -> str:
        """GiGPO's anchor-state key for ``env`` (``observation`` unless set)."""
        return self.anchor_state.get(env, "observation")

    def to_dict(self) -> dict:
        """The settings; ``anchor_state`` only when set, so that runs without
        it keep the job parameters (and caches) they had before it existed."""
        settings = asdict(self)
        if not settings["anchor_state"]:
            del settings["anchor_state"]
        return settings

"""Settings of LoRA supervised fine-tuning (defaults from Fed-SE)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from evoflow.precision import PRECISIONS


@dataclass
class SFTConfig:
    """How to fine-tune a LoRA adapter on episodes.

    Defaults follow Fed-SE: r=8, α=16 on all linear layers, AdamW at 5e-5 with a
    cosine schedule and no warm-up, 2 epochs, sequences up to 4096 tokens.
    """

    # Parameters that control the adapter
    lora_r: int = field(default=8, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling numerator."})
    lora_dropout: float = field(
        default=0.05, metadata={"help": "Dropout on the LoRA input."}
    )
    target_modules: str | list[str] = field(
        default="all-linear", metadata={"help": "Modules wrapped by LoRA."}
    )
    # Parameters that control optimisation
    learning_rate: float = field(
        default=5e-5, metadata={"help": "Peak AdamW learning rate."}
    )
    epochs: float = field(default=2.0, metadata={"help": "Passes over the data."})
    steps: int | None = field(
        default=None,
        metadata={
            "help": "Optimizer steps per job whatever the data's size: the data is "
            "cycled, each pass in a new order, and epochs is ignored (unset: "
            "epochs decide)."
        },
    )
    explored_steps: int | None = field(
        default=None,
        metadata={
            "help": "With steps: up to this many more optimizer steps on the "
            "episodes a client's own exploration found (epochs passes over them "
            "at most), while steps covers its expert demonstrations alone (unset: "
            "steps covers every episode)."
        },
    )
    explored_thoughts: bool = field(
        default=True,
        metadata={
            "help": "Learn the whole replies of explored episodes; False learns "
            "each ReAct reply from its one 'Action:' tag on, its sampled "
            "thought kept as context only, and a reply without one tag not at "
            "all (expert demonstrations always learn both)."
        },
    )
    batch_size: int = field(default=4, metadata={"help": "Sequences per micro-batch."})
    grad_accum: int = field(
        default=1, metadata={"help": "Micro-batches per optimizer step."}
    )
    warmup_ratio: float = field(
        default=0.0, metadata={"help": "Share of steps warming up."}
    )
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay."})
    max_grad_norm: float = field(
        default=1.0, metadata={"help": "Gradient clipping norm."}
    )
    # Parameters that control the data
    max_length: int = field(
        default=4096,
        metadata={
            "help": "Longer episodes keep their opening and their latest whole turns."
        },
    )
    seed: int = field(
        default=0, metadata={"help": "Seeds LoRA init, dropout and order."}
    )
    proximal_mu: float = field(
        default=0.0,
        metadata={
            "help": "FedProx: weight mu of (mu/2)·||θ − θ_start||² over the "
            "LoRA weights, pulling a client towards the adapter it started from."
        },
    )
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Trade compute for memory."}
    )
    precision: str = field(
        default="auto",
        metadata={
            "help": "Forward-pass compute dtype: auto (bf16 autocast where the "
            "hardware has fast bf16, else fp32), float32 or bfloat16.",
            "choices": PRECISIONS,
        },
    )

    def __post_init__(self) -> None:
        for name in ("lora_r", "lora_alpha", "batch_size", "grad_accum", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.epochs <= 0:
            raise ValueError(f"epochs must be > 0, got {self.epochs}")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"steps must be >= 1 or unset, got {self.steps}")
        if self.explored_steps is not None and (
            self.explored_steps < 1 or self.steps is None
        ):
            raise ValueError(
                "explored_steps must be >= 1 and needs steps, got "
                f"explored_steps={self.explored_steps}, steps={self.steps}"
            )
        if not 0 <= self.lora_dropout < 1:
            raise ValueError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {', '.join(PRECISIONS)}, "
                f"got {self.precision!r}"
            )
        if self.proximal_mu < 0:
            raise ValueError(f"proximal_mu must be >= 0, got {self.proximal_mu}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")

    def to_dict(self) -> dict:
        """The settings; ``proximal_mu``, ``steps`` and ``explored_steps`` only
        when set and ``explored_thoughts`` only when off, so that runs without
        them keep the job parameters (and caches) they had before they
        existed."""
        settings = asdict(self)
        for name in ("proximal_mu", "steps", "explored_steps"):
            if not settings[name]:
                del settings[name]
        if settings["explored_thoughts"]:
            del settings["explored_thoughts"]
        return settings

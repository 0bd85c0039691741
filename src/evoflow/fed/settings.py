"""The server step's settings (``fed.aggregation`` in a config, overridable
per method under ``aggregation:``), checked once with one clear error each."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

RULES = ("naive", "exact")
UPLINKS = ("fp32", "bf16")


@dataclass(frozen=True)
class AggregationSettings:
    rule: str = (
        "naive"  # naive: mean of A and of B (Fed-SE); exact: mean of B·A, SVD to rank r
    )
    weighted: bool = (
        False  # weights = explored successes (the w/ Weighted Avg kind sets it)
    )
    uplink: str = "fp32"  # the dtype a client's adapter crosses the wire in
    participation: float = 1.0  # fraction of the clients sampled each round (seeded)
    deadline_s: float | None = None  # a client whose training took longer is dropped
    server_momentum: float = 0.0  # FedAvgM's β (0: none)
    server_lr: float = 1.0  # FedAvgM's server learning rate
    dp_clip: float | None = (
        None  # DP-FedAvg: clip of each client's update (None: no DP)
    )
    dp_noise: float = 0.0  # DP-FedAvg: noise multiplier σ
    dp_delta: float = 1e-5  # δ of the (ε, δ) the run reports

    def __post_init__(self):
        problems = []
        if self.rule not in RULES:
            problems.append(f"rule {self.rule!r} is not one of {list(RULES)}")
        if self.uplink not in UPLINKS:
            problems.append(f"uplink {self.uplink!r} is not one of {list(UPLINKS)}")
        if not 0 < self.participation <= 1:
            problems.append(f"participation {self.participation} is not in (0, 1]")
        if self.deadline_s is not None and self.deadline_s <= 0:
            problems.append(f"deadline_s {self.deadline_s} is not > 0")
        if not 0 <= self.server_momentum < 1 or self.server_lr <= 0:
            problems.append("server_momentum must be in [0, 1) and server_lr > 0")
        if self.dp_clip is not None and (self.dp_clip <= 0 or self.dp_noise < 0):
            problems.append("dp_clip must be > 0 and dp_noise >= 0")
        if self.dp_clip is not None and self.rule == "exact":
            problems.append(
                "dp_clip works on the naive average of A and B; use rule: naive"
            )
        if not 0 < self.dp_delta < 1:
            problems.append(f"dp_delta {self.dp_delta} is not in (0, 1)")
        if problems:
            raise ValueError("fed.aggregation: " + "; ".join(problems))

    @property
    def needs_reference(self) -> bool:
        """Whether the step needs the adapter the clients started from."""
        return (
            self.dp_clip is not None or self.server_momentum > 0 or self.server_lr != 1
        )

    @classmethod
    def from_config(
        cls, config: dict, entry: dict | None = None, weighted: bool = False
    ):
        """The experiment's ``fed.aggregation`` with a method entry's
        ``aggregation`` on top."""
        values = {**(config.get("fed") or {}).get("aggregation", {}),
                  **((entry or {}).get("aggregation") or {})}  # fmt: skip
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(values) - known):
            raise ValueError(
                f"fed.aggregation: unknown keys {unknown}; known: {sorted(known)}"
            )
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)

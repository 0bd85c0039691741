"""The server step's settings (``fed.aggregation`` in a config, overridable
per method under ``aggregation:``), checked once with one clear error each."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

RULES = ("naive", "exact")
UPLINKS = ("fp32", "bf16")


@dataclass(frozen=True)
class AggregationSettings:
    """``rule``: naive (mean of A and of B, Fed-SE's) or exact (mean of B·A,
    truncated SVD back to the rank); ``uplink``: the dtype an adapter crosses
    the wire in; ``participation``: the fraction of clients sampled each round
    (seeded); ``deadline_s``: a client whose training took longer is dropped;
    ``server_momentum``/``server_lr``: FedAvgM's β and step; ``dp_clip``/
    ``dp_noise``/``dp_delta``: DP-FedAvg's clip, noise multiplier and the δ
    of the reported ε (no DP without a clip); ``max_norm_ratio``: a client
    whose update norm exceeds this multiple of the round's median is refused
    (unset: no norm check; a non-finite tensor is refused always)."""

    rule: str = "naive"
    uplink: str = "fp32"
    participation: float = 1.0
    deadline_s: float | None = None
    server_momentum: float = 0.0
    server_lr: float = 1.0
    dp_clip: float | None = None
    dp_noise: float = 0.0
    dp_delta: float = 1e-5
    max_norm_ratio: float | None = None

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
        if self.dp_clip is None and self.dp_noise > 0:
            problems.append("dp_noise needs dp_clip (no clip, no privacy)")
        if self.rule == "exact" and (self.server_momentum > 0 or self.server_lr != 1):
            problems.append(
                "server momentum steps on the naive average's factors; use rule: naive"
            )
        if self.dp_clip is not None and self.rule == "exact":
            problems.append(
                "dp_clip works on the naive average of A and B; use rule: naive"
            )
        if not 0 < self.dp_delta < 1:
            problems.append(f"dp_delta {self.dp_delta} is not in (0, 1)")
        if self.max_norm_ratio is not None and self.max_norm_ratio <= 1:
            problems.append(f"max_norm_ratio {self.max_norm_ratio} is not > 1")
        if problems:
            raise ValueError("fed.aggregation: " + "; ".join(problems))

    @property
    def needs_reference(self) -> bool:
        """Whether the step needs the adapter the clients started from."""
        return (
            self.dp_clip is not None or self.server_momentum > 0 or self.server_lr != 1
        )

    @classmethod
    def from_config(cls, config: dict, entry: dict | None = None):
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
        """The settings; ``max_norm_ratio`` only when set, so that runs
        without it keep the job parameters (and caches) they had before it."""
        settings = asdict(self)
        if settings["max_norm_ratio"] is None:
            del settings["max_norm_ratio"]
        return settings

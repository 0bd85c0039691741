"""What every method family shares: a method kind, and a configured method.

A *family* (``fedse``, ``agentevol``, …; one module each in this package) owns
a set of kinds and turns a configured method into the workflow's targets and
per-job inputs as plain Python (see :mod:`evoflow.methods.registry`). A
``Kind`` is the registry's record of one kind: its family, its table title,
and the switches the family's wiring reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from evoflow.seeding import derive_seed
from evoflow.train.sft_config import SFTConfig

POOLED = "pooled"  # the client name of a Centralized (pooled-data) training job
ALL_CLIENTS = "all-clients"


@dataclass(frozen=True)
class Kind:
    """One method kind (the ``kind`` of a config entry)."""

    name: str
    family: str
    title: str  # its row label in the results table
    ablation: bool = False  # a bar of the family's ablation figure
    trains: bool = True
    federated: bool = False  # client adapters are averaged every round
    explores: bool = False  # clients play their env every round
    history: bool = True  # buffers accumulate earlier rounds
    select: str = "success"  # which explored episodes enter the buffer
    weighted: bool = False  # aggregation weights = explored successes in the buffer
    per_env: bool = False  # one adapter per env, evaluated on that env only
    pooled: bool = False  # one adapter on all envs' data, no federation
    iterative: bool = False  # round 0 trains a base; every round is evaluated
    expert_set: str = "expert"  # the demonstrations a pooled adapter learns
    matched: bool = False  # clients copy an exploring method's training steps
    versus: tuple[str, ...] = ()  # kinds the report compares it with (paired)


@dataclass(frozen=True)
class Method:
    """A configured method: its kind and fully resolved settings."""

    name: str
    kind: Kind
    rounds: int
    eval_stride: int
    sft: SFTConfig
    options: dict[str, Any] = field(default_factory=dict)  # the family's settings
    eval_first: bool = True  # a federated method's round 1 is evaluated too

    @property
    def eval_rounds(self) -> list[int]:
        """Rounds whose adapter is evaluated: every ``eval_stride``-th and the
        last one; a federated method's first round too (its curve's start)
        unless ``eval_first`` is off."""
        if not self.kind.trains:
            return [0]
        if self.kind.iterative:
            return sorted({*range(0, self.rounds + 1, self.eval_stride), self.rounds})
        if not self.kind.federated:
            return [1]
        every = range(self.eval_stride, self.rounds + 1, self.eval_stride)
        return sorted({*([1] if self.eval_first else []), *every, self.rounds})

    @property
    def final_round(self) -> int:
        return self.eval_rounds[-1]

    def sft_for(self, round: int, client: str) -> SFTConfig:
        """The SFT settings of one training job, with the job's own seed.

        Parameters
        ----------
        round
            training round (1 for methods trained once).
        client
            the client's env, or ``POOLED`` for a Centralized adapter.

        Returns
        -------
        SFTConfig
            ``self.sft`` whose ``seed`` is derived from (experiment seed, round,
            client); all clients of a federated method's round 1 share theirs,
            so their fresh LoRAs start from the same weights. The method's name
            is not part of it: methods are paired, so two methods whose jobs
            see the same data and settings take the same steps (FedIT and
            Fed-SE start round 1 from one LoRA initialisation), and a
            difference between them is a difference in what they train on.
        """
        shared = self.kind.federated and round == 1
        who = ALL_CLIENTS if shared else client
        seed = derive_seed(self.sft.seed, "sft", round, who)
        return replace(self.sft, seed=seed)

    def settings(self) -> dict[str, Any]:
        """Everything that decides this method's artifacts (rule params)."""
        settings = {
            "kind": self.kind.name,
            "rounds": self.rounds,
            "sft": self.sft.to_dict(),
        }
        if self.options:
            settings["options"] = self.options
        return settings


def evaluated_as(method: Method, round: int) -> tuple[str, int]:
    """The (method, round) whose evaluation stands for ``method`` at ``round``.

    Round 0 of a method that starts from another method's adapter (``rl.init``;
    AgentEvol's base agent trained as AgentTraj-SFT; kept as the options
    ``init`` and ``init_round``) is that method's evaluation there: the same
    adapter played greedily on the same test tasks, so it runs once. Every other
    round is the method's own.
    """
    init, at = method.options.get("init"), method.options.get("init_round")
    if round == 0 and init is not None and at is not None:
        return init, at
    return method.name, round


def evaluation_files(layout, method: Method, envs) -> list[str]:
    """The metrics files of every evaluated round of a method (any family)."""
    return [f for r in method.eval_rounds
            for f in layout.evaluations(*evaluated_as(method, r), envs, "metrics.json")]  # fmt: skip


def span_range(round: int, span_steps: int, steps: int) -> tuple[int, int]:
    """(first global step, steps) of span ``round`` (1-based) of a span family."""
    start = (round - 1) * span_steps
    return start, min(span_steps, steps - start)


def span_files(layout, method: Method, leaves: tuple[str, ...]) -> list[str]:
    """Per span (round) of a span family: its adapter and its ``leaves``."""
    files = []
    for round in range(1, method.rounds + 1):
        files.append(layout.global_adapter(method.name, round))
        files += [layout.server(method.name, round, leaf) for leaf in leaves]
    return files


def buffer_sources(layout, method: Method, round: int, env: str, grow: bool) -> dict:
    """What a round's buffer is built from: the env's expert demos (the seed),
    the round's exploration shard and, when it ``grow``s, last round's buffer."""
    inputs = {
        "seed": layout.expert_manifest(env),
        "explored": layout.client(method.name, round, env, "explore.parquet"),
    }
    if grow and round > 1:
        inputs["previous"] = layout.client(method.name, round - 1, env, "buffer.json")
    return inputs


def tts_files(layout, config: dict, methods: dict[str, Method], leaf: str) -> list[str]:
    """Test-time scaling of the configured methods' final adapters: a max-turn
    sweep (``tts.turns``) and pass@k over ``tts.samples`` samples per task."""
    tts = config["tts"]
    envs = list(config["envs"])
    files = []
    for name in tts["methods"]:
        if name not in methods:
            raise ValueError(f"tts.methods: {name!r} is not a configured method")
        final = methods[name].final_round
        probes = [f"turns={h}" for h in tts["turns"]] + (
            ["passk"] if tts["samples"] else []
        )
        files += [layout.tts(name, final, p, env, leaf) for p in probes for env in envs]
    return files

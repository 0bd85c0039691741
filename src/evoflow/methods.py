"""Which steps make up each method, as data the workflow rules read.

A method (an entry of ``methods:`` in the config) has a *kind*:

============================ ========================================================
pretrained                   the base model, evaluated once (round 0)
local                        one LoRA per env on that env's expert demos, each
                             evaluated on its own env
centralized                  one LoRA on every env's expert demos (data pooled)
fedit                        federated rounds on static expert demos
fedse                        federated self-evolution: explore, keep successes,
                             accumulate, train, average
fedse_no_history             buffer = expert demos + this round's successes only
fedse_no_filter              every explored episode enters the buffer
fedse_weighted               aggregation weighted by each client's explored
                             successes (see below)
============================ ========================================================

Round ``t`` of a federated method starts from the global adapter of round
``t-1``; round 0 is the base model. ``w/o History`` keeps the expert demos (the
seed buffer): only the accumulation of earlier rounds' explored successes is
removed — without demonstrations a weak base model has nothing to learn from in
round 1, which the paper's 64.1 % for this variant rules out.

``w/ Weighted Avg`` weights each client by "the number of successful
trajectories". We read that as the successful episodes the client's own
exploration has put into its buffer so far (``buffer_explored_successes`` in
the adapter's ``training.json``): the expert demonstrations are left out, since
they are a fixed seed set, not trajectories the client succeeded in, and
counting them would weight clients by the size of their demonstration set. In a
round where every client's count is 0 the server takes the unweighted mean
instead and says so in ``comm.json`` (``applied: mean`` and a ``fallback``
reason).

Each training job gets its own SFT seed (batch order, LoRA dropout), derived
from (experiment seed, method, round, client) by ``Method.sft_for``. The trainer
also seeds a fresh LoRA's initialisation with it, so in round 1 of a federated
method — where every client starts from a fresh LoRA that stands for the one
global adapter the server broadcasts — the seed is shared by all clients of the
round; from round 2 on clients start from the global adapter and each client's
seed is its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from evoflow.seeding import derive_seed
from evoflow.train.sft_config import SFTConfig

POOLED = "pooled"  # the client name of a Centralized (pooled-data) training job
ALL_CLIENTS = "all-clients"


@dataclass(frozen=True)
class Kind:
    name: str
    trains: bool = True
    federated: bool = False  # client adapters are averaged every round
    explores: bool = False  # clients play their env every round
    history: bool = True  # buffers accumulate earlier rounds
    select: str = "success"  # which explored episodes enter the buffer
    weighted: bool = False  # aggregation weights = explored successes in the buffer
    per_env: bool = False  # one adapter per env, evaluated on that env only
    pooled: bool = False  # one adapter on all envs' data, no federation


KINDS = {
    kind.name: kind
    for kind in (
        Kind("pretrained", trains=False),
        Kind("local", per_env=True),
        Kind("centralized", pooled=True),
        Kind("fedit", federated=True),
        Kind("fedse", federated=True, explores=True),
        Kind("fedse_no_history", federated=True, explores=True, history=False),
        Kind("fedse_no_filter", federated=True, explores=True, select="all"),
        Kind("fedse_weighted", federated=True, explores=True, weighted=True),
    )
}


@dataclass(frozen=True)
class Method:
    """A configured method: its kind and fully resolved settings."""

    name: str
    kind: Kind
    rounds: int
    eval_stride: int
    sft: SFTConfig

    @property
    def eval_rounds(self) -> list[int]:
        """Rounds whose adapter is evaluated (the last one always)."""
        if not self.kind.trains:
            return [0]
        if not self.kind.federated:
            return [1]
        return sorted(
            {*range(self.eval_stride, self.rounds + 1, self.eval_stride), self.rounds}
        )

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
            ``self.sft`` whose ``seed`` is derived from (experiment seed, method,
            round, client); all clients of a federated method's round 1 share
            theirs, so their fresh LoRAs start from the same weights.
        """
        shared = self.kind.federated and round == 1
        who = ALL_CLIENTS if shared else client
        seed = derive_seed(self.sft.seed, "sft", self.name, round, who)
        return replace(self.sft, seed=seed)

    def settings(self) -> dict[str, Any]:
        """Everything that decides this method's artifacts (rule params)."""
        return {
            "kind": self.kind.name,
            "rounds": self.rounds,
            "sft": self.sft.to_dict(),
        }


def methods_from_config(config: dict[str, Any]) -> dict[str, Method]:
    """Resolve every configured method (kind defaults to the method's name)."""
    resolved = {}
    for name, entry in config["methods"].items():
        kind = entry.get("kind") or name
        if kind not in KINDS:
            raise ValueError(
                f"methods.{name}: kind {kind!r} is not one of {', '.join(KINDS)}; "
                "set 'kind' for a custom method name"
            )
        train = {**config["train"], **(entry.get("train") or {})}
        rounds = entry.get("rounds") or config["fed"]["rounds"]
        sft = SFTConfig(seed=config["seed"], **train)
        resolved[name] = Method(
            name, KINDS[kind], rounds, config["fed"]["eval_stride"], sft
        )
    return resolved

"""Where an experiment's artifacts live: one place for every path of the DAG.

``results/<exp>/<method>/round=<t>/client=<env>/...`` for a client's work in a
round, ``.../global/...`` for the server's (or a single pooled adapter), and
``.../eval/env=<env>/...`` for evaluations. Rules and method families build
paths only through a :class:`Layout`, so a path is spelled once.
"""

from __future__ import annotations

from dataclasses import dataclass

# Expert sets: the demonstrations every method starts from (``demos`` per env),
# and AgentTraj-L-SFT's larger one (``demos_large``).
EXPERT = "expert"
EXPERT_LARGE = "expert_l"
EXPERT_SETS = (EXPERT, EXPERT_LARGE)


@dataclass(frozen=True)
class Layout:
    """Paths under one experiment's results folder (e.g. ``results/embedded``)."""

    results: str

    def client(self, method: str, round: int | str, env: str, leaf: str) -> str:
        return f"{self.results}/{method}/round={round}/client={env}/{leaf}"

    def server(self, method: str, round: int | str, leaf: str) -> str:
        return f"{self.results}/{method}/round={round}/global/{leaf}"

    def global_adapter(self, method: str, round: int | str) -> str:
        return self.server(method, round, "adapter")

    def comm(self, method: str, round: int | str) -> str:
        return self.server(method, round, "comm.json")

    def demos(self, env: str, expert_set: str = EXPERT) -> str:
        return f"{self.results}/{expert_set}/env={env}/demos.parquet"

    def expert_manifest(self, env: str, expert_set: str = EXPERT) -> str:
        return f"{self.results}/{expert_set}/env={env}/manifest.json"

    @property
    def pooled_manifest(self) -> str:
        return self.pooled_manifest_of(EXPERT)

    def pooled_manifest_of(self, expert_set: str) -> str:
        """Every env's demonstrations of one expert set, as one dataset."""
        return f"{self.results}/{expert_set}/manifest.json"

    def evaluation(self, method: str, round: int | str, env: str, leaf: str) -> str:
        return f"{self.results}/{method}/round={round}/eval/env={env}/{leaf}"

    def evaluations(self, method: str, round: int | str, envs, leaf: str) -> list[str]:
        return [self.evaluation(method, round, env, leaf) for env in envs]

    def tts(
        self, method: str, round: int | str, probe: str, env: str, leaf: str
    ) -> str:
        """Test-time scaling runs: ``probe`` is ``turns=<h>`` or ``passk``."""
        return f"{self.results}/{method}/round={round}/tts/{probe}/env={env}/{leaf}"

    def sage_data(self, leaf: str) -> str:
        """SAGE's experiment-wide data: the seed pool, the evaluation problems."""
        return f"{self.results}/sage_data/{leaf}"

    @property
    def sage_warmup(self) -> str:
        """The adapter SFT-warmed on the roles' tags that every SAGE method starts from."""
        return f"{self.results}/sage_warmup/adapter"

    def sage_eval(self, method: str, round: int | str, leaf: str) -> str:
        return f"{self.results}/{method}/round={round}/sage_eval/{leaf}"

    @property
    def config(self) -> str:
        return f"{self.results}/config.json"

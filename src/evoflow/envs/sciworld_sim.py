"""ScienceWorld simulators: JVMs started once, bounded, reused and recycled.

The PyPI package ``scienceworld`` runs its simulator in a JVM it launches per
``ScienceWorldEnv`` (about 2 s each). AgentGym's server opens one per session
and never closes them, which its users saw exhaust memory over hours of RL. Here
a process-wide :class:`SimulatorPool` hands out started simulators: a closed
environment returns its simulator to the pool, at most ``max_idle`` stay idle,
and a simulator that has loaded ``recycle_after`` tasks is shut down instead of
reused (the simulator's own state grows with use). Each JVM's heap is capped
(``-Xmx``), its hash order made independent of its history (``JVM_OPTIONS``),
and every call to it has a read timeout.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

HEAP_MB = int(os.environ.get("EVOFLOW_SCIWORLD_HEAP_MB", "768"))
CALL_TIMEOUT_S = 120.0  # one simulator call (a step, a load with its gold path)
STEP_LIMIT = 10_000  # the package's own move cap; evoflow's turn caps are lower
# The simulator keeps objects in hash sets keyed by identity hash codes, so the
# order in which a room lists its contents (and ambiguity prompts number their
# choices) depends on everything the JVM did before. A constant identity hash
# makes every set iterate in insertion order: the same game reads the same on
# any JVM, after any history (tests/envs/test_sciworld.py checks it).
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")

_launch_lock = threading.Lock()
for _name in ("py4j", "scienceworld"):  # both log every socket and start at INFO
    logging.getLogger(_name).setLevel(logging.WARNING)


class SimulatorUnavailable(RuntimeError):
    """Java or the ``scienceworld`` package is missing."""


def check_available() -> None:
    """Raise :class:`SimulatorUnavailable` naming what is missing."""
    if shutil.which("java") is None:
        raise SimulatorUnavailable(
            "sciworld needs Java 17 on PATH (`java`); install a JRE, e.g. "
            "Debian's openjdk-17-jre-headless"
        )
    try:
        import scienceworld  # noqa: F401
    except ImportError as exc:
        raise SimulatorUnavailable(
            f"sciworld needs the PyPI package scienceworld ({exc})"
        ) from None


@dataclass
class StepOutcome:
    observation: str
    score: int  # 0..100, or negative once the task has failed
    completed: bool


class Simulator:
    """One JVM running the ScienceWorld simulator."""

    def __init__(self, heap_mb: int = HEAP_MB) -> None:
        check_available()
        from scienceworld import ScienceWorldEnv

        with _launch_lock:  # the option is read by the JVM the package launches
            previous = os.environ.get("JAVA_TOOL_OPTIONS")
            os.environ["JAVA_TOOL_OPTIONS"] = " ".join(
                (f"-Xmx{heap_mb}m", *JVM_OPTIONS)
            )
            try:
                self._env = ScienceWorldEnv("", envStepLimit=STEP_LIMIT)
            finally:
                if previous is None:
                    os.environ.pop("JAVA_TOOL_OPTIONS")
                else:
                    os.environ["JAVA_TOOL_OPTIONS"] = previous
        # every call to the JVM times out: connections made from now on, and
        # the ones already open
        client = self._env._gateway._gateway_client
        client.gateway_parameters.read_timeout = CALL_TIMEOUT_S
        for connection in list(client.deque):
            connection.socket.settimeout(CALL_TIMEOUT_S)
        self._server = self._env.server
        self.loads = 0

    @property
    def pid(self) -> int:
        return self._env._gateway.java_process.pid

    def task_names(self) -> dict[str, str]:
        """The simulator's task ids ("1-1", ...) and names, in its own order."""
        return dict(self._env.tasks)

    def variations(self, task: str) -> dict[str, list[int]]:
        """ScienceWorld's own train/dev/test variation indices of ``task``."""
        self._server.load(task, 0, "", False)
        return {
            "train": list(self._server.getVariationsTrain()),
            "dev": list(self._server.getVariationsDev()),
            "test": list(self._server.getVariationsTest()),
        }

    def max_variations(self, task: str) -> int:
        return int(self._server.getTaskMaxVariations(task))

    def load(self, task: str, variation: int, gold: bool = False) -> str:
        """Load a task variation; return its task description."""
        self._server.load(task, variation, "", gold)
        self.loads += 1
        return str(self._server.getTaskDescription())

    def gold_actions(self) -> list[str]:
        return [str(a) for a in self._server.getGoldActionSequence()]

    def step(self, action: str) -> StepOutcome:
        # the package's step() also lists every valid action/object pair on each
        # call (thousands of strings); evoflow reads only what it uses
        observation = str(self._server.step(action))
        score = int(round(100 * self._server.getScore()))
        return StepOutcome(observation, score, bool(self._server.getCompleted()))

    def goal_progress(self) -> str:
        return str(self._server.getGoalProgressStr())

    def possible_actions(self) -> list[str]:
        return [str(a) for a in self._server.getPossibleActions()]

    def possible_objects(self) -> list[str]:
        return [str(o) for o in self._server.getPossibleObjects()]

    def close(self) -> None:
        try:
            self._env.close()
        except Exception:  # the JVM may already be gone
            pass
        self._env.close = lambda: None  # the package's __del__ closes again
        process = self._env._gateway.java_process
        try:
            process.wait(timeout=10)
        except Exception:
            process.kill()


class SimulatorPool:
    """Started simulators shared by every SciWorld environment of a process."""

    def __init__(self, max_idle: int = 4, recycle_after: int = 500) -> None:
        self.max_idle = max_idle
        self.recycle_after = recycle_after
        self._idle: list[Simulator] = []
        self._lock = threading.Lock()
        self.started = 0

    def lease(self) -> Simulator:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            self.started += 1
        return Simulator()

    def release(self, simulator: Simulator) -> None:
        with self._lock:
            keep = (
                simulator.loads < self.recycle_after and len(self._idle) < self.max_idle
            )
            if keep:
                self._idle.append(simulator)
        if not keep:
            simulator.close()

    @contextmanager
    def leased(self) -> Iterator[Simulator]:
        simulator = self.lease()
        try:
            yield simulator
        finally:
            self.release(simulator)

    def pids(self) -> list[int]:
        with self._lock:
            return [s.pid for s in self._idle]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for simulator in idle:
            simulator.close()


POOL = SimulatorPool()
atexit.register(POOL.close)

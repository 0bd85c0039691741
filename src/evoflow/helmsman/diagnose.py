"""Deterministic diagnosis of one sandboxed Flower run.

Level 1 (runtime integrity): the run finished inside its limits with exit 0,
its log holds no traceback and no ClientApp / ServerApp error (Flower logs
those and may still exit 0), no round reported failures ("received N results
and M failures" with M > 0), the host could score its predictions and its
saved final model (``scoring``; a model with NaN weights fails here), and no
scored accuracy is NaN. Level 2 (semantic correctness, checked only when
level 1 passes): every round had participants (read from the in-process
runtime's closing log line), the run played the rounds it was asked for, and
accuracy neither stagnates nor diverges.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from evoflow.sandbox import Outcome

RESULTS = re.compile(r"received (\d+) results and (\d+) failures", re.IGNORECASE)
PARTICIPATION = re.compile(r"participation: (\d+) training replies in (\d+) rounds")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Flower's log lines at level ERROR ("ERROR :  ..."; the runtime logs a ClientApp's
# exception so), not any line that happens to contain the word
APP_ERROR = re.compile(r"^\s*ERROR\b[ :]+(.*)$", re.MULTILINE)
STOPPED = {
    "timeout": "the run passed its time limit and was killed",
    "memory": "the run passed its memory limit",
    "output": "the run wrote more than its output limit",
}


@dataclass(frozen=True)
class Thresholds:
    """When accuracy counts as stagnant or diverging."""

    stagnant: float = 0.02  # best minus first accuracy below this: no learning
    diverged: float = 0.05  # last accuracy this far below the best: diverging


@dataclass(frozen=True)
class Diagnosis:
    """``SUCCESS`` or ``FAIL`` at ``level`` (1 runtime, 2 semantic), with one
    sentence per problem found."""

    verdict: str
    level: int | None
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.verdict == "SUCCESS"

    def report(self) -> str:
        if self.ok:
            return "SUCCESS: the run finished and its accuracy improved."
        lines = [
            f"FAIL at level {self.level} ({'runtime' if self.level == 1 else 'semantic'}):"
        ]
        return "\n".join(lines + [f"- {p}" for p in self.problems])


def diagnose(outcome: Outcome, log: str, metrics: bytes | None, rounds: int,
             thresholds: Thresholds = Thresholds(), continual: bool = False,
             watch: str = "accuracy", unscored: tuple[str, ...] = ()) -> Diagnosis:  # fmt: skip
    """The verdict on a run: ``log`` is its stdout and stderr, ``metrics`` the
    rounds the host scored, as ``metrics.json`` bytes (None where none were),
    ``unscored`` why its predictions or saved model could not be scored. ``watch`` is the
    accuracy level 2 follows (``client_accuracy`` where the task is scored on
    the clients' own models, when the run reports it). In a ``continual`` task
    accuracy on the whole test set falls as tasks change (forgetting is what
    such a task measures), so only stagnation is checked there."""
    log = ANSI.sub("", log)
    history, problem = _history(metrics, watch)
    scoring = list(unscored) or ([problem] if problem else [])
    level1 = _runtime(outcome, log) + scoring + _nan(history)
    if level1:
        return Diagnosis("FAIL", 1, tuple(level1))
    level2 = _semantic(log, history, rounds, thresholds, continual)
    return Diagnosis("FAIL", 2, tuple(level2)) if level2 else Diagnosis("SUCCESS", None)


def _runtime(outcome: Outcome, log: str) -> list[str]:
    problems = []
    if outcome.status in STOPPED:
        problems.append(f"{STOPPED[outcome.status]} ({outcome.seconds:.0f} s)")
    elif outcome.returncode != 0:
        problems.append(f"the run exited with code {outcome.returncode}")
    elif outcome.status != "passed":
        problems.append("the run ended before its last statement (it exited early)")
    error = _last_error(log)
    if error:
        problems.append(f"it raised {error}")
    logged = APP_ERROR.search(log)
    if logged:
        problems.append(f"Flower logged an error: {logged.group(1).strip()[:200]}")
    failures = [(int(n), int(m)) for n, m in RESULTS.findall(log) if int(m) > 0]
    if failures:
        n, m = failures[0]
        problems.append(f"{len(failures)} aggregation(s) had failing clients "
                        f"(first: {n} results and {m} failures)")  # fmt: skip
    return problems


def _last_error(log: str) -> str | None:
    """The exception line that ends the last traceback in the log."""
    if "Traceback (most recent call last)" not in log:
        return None
    tail = log[log.rindex("Traceback (most recent call last)") :].splitlines()
    for line in tail[1:]:
        text = line.strip()
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", text):
            return text[:300]
    return "an exception (traceback in the log)"


def _history(metrics: bytes | None, watch: str) -> tuple[list[dict], str | None]:
    """Round and accuracy (the watched one, over the rounds that report it)."""
    if metrics is None:
        return [], "no rounds were scored"
    try:
        payload = json.loads(metrics)
        rounds = payload["rounds"]
        if watch != "accuracy" and any(watch in r for r in rounds):
            rounds = [{**r, "accuracy": r[watch]} for r in rounds if watch in r]
        history = [{"round": int(r["round"]), "accuracy": float(r["accuracy"])}
                   for r in rounds]  # fmt: skip
    except (ValueError, KeyError, TypeError) as error:
        return [], f"the scored rounds are malformed ({type(error).__name__}: {error})"
    if not history:
        return [], "no rounds were scored"
    return history, None


def _nan(history: list[dict]) -> list[str]:
    bad = [r["round"] for r in history if not math.isfinite(r["accuracy"])]
    return [f"accuracy is NaN or infinite from round {bad[0]}"] if bad else []


def _semantic(
    log: str, history: list[dict], rounds: int, thresholds: Thresholds, continual: bool
) -> list[str]:
    problems = []
    empty = [n for n, _ in RESULTS.findall(log) if int(n) == 0]
    if empty:
        problems.append(
            f"{len(empty)} aggregation(s) received no results (zero participation)"
        )
    counted = PARTICIPATION.findall(log)
    trained = int(counted[-1][1]) if counted else 0
    if trained < rounds and not empty:
        problems.append(
            f"clients trained in {trained} of the {rounds} rounds (zero participation)"
        )
    played = max(r["round"] for r in history)
    if played < rounds:
        problems.append(f"it played {played} of the {rounds} rounds asked for")
    accuracy = [r["accuracy"] for r in history]
    if max(accuracy) - accuracy[0] < thresholds.stagnant:
        problems.append(f"accuracy is stagnant ({accuracy[0]:.3f} at the start, best "
                        f"{max(accuracy):.3f} after {played} rounds)")  # fmt: skip
    elif not continual and max(accuracy) - accuracy[-1] > thresholds.diverged:
        problems.append(
            f"accuracy diverges (best {max(accuracy):.3f}, last {accuracy[-1]:.3f})"
        )
    return problems

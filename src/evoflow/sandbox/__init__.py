"""Run untrusted code (generated programs) with limits, and ask it for values."""

from evoflow.sandbox.allow import UnknownPackage
from evoflow.sandbox.isolation import SandboxUnavailable
from evoflow.sandbox.outcome import STATUSES, Limits, Outcome
from evoflow.sandbox.runner import run_files, run_python

__all__ = [
    "STATUSES",
    "Limits",
    "Outcome",
    "SandboxUnavailable",
    "UnknownPackage",
    "run_files",
    "run_python",
]

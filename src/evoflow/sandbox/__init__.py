"""Run untrusted code (generated programs and their tests) with limits."""

from evoflow.sandbox.isolation import SandboxUnavailable
from evoflow.sandbox.runner import STATUSES, Limits, Outcome, run_files, run_python

__all__ = [
    "STATUSES",
    "Limits",
    "Outcome",
    "SandboxUnavailable",
    "run_files",
    "run_python",
]

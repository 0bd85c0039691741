"""Federated aggregation of LoRA adapters, with exact communication accounting.

This package reads adapter folders only: nothing here can open a trajectory.
Its names load on first use (torch with them), so that ``evoflow.fed.settings``
is light enough for the workflow's DAG to import.
"""

from __future__ import annotations

from importlib import import_module

_WHERE = {
    "aggregate_adapters": "evoflow.fed.aggregate",
    "STRATEGIES": "evoflow.fed.strategies",
    "Strategy": "evoflow.fed.strategies",
    "mean": "evoflow.fed.strategies",
    "weighted_mean": "evoflow.fed.strategies",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'evoflow.fed' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)

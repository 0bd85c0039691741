"""Federated aggregation of LoRA adapters, with exact communication accounting.

This package reads adapter folders only: nothing here can open a trajectory.
"""

from evoflow.fed.aggregate import aggregate_adapters
from evoflow.fed.strategies import STRATEGIES, Strategy, mean, weighted_mean

__all__ = ["STRATEGIES", "Strategy", "aggregate_adapters", "mean", "weighted_mean"]

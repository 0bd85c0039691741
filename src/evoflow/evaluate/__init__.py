"""Evaluation: greedy rollouts on test splits and the metrics of each run."""

from evoflow.evaluate.metrics import episode_metrics
from evoflow.evaluate.run import evaluate_env

__all__ = ["episode_metrics", "evaluate_env"]

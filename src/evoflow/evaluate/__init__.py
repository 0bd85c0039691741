"""Evaluation: greedy rollouts on test splits and the metrics of each run."""

from evoflow.evaluate.metrics import episode_metrics
from evoflow.evaluate.run import evaluate_envs, run_evaluation

__all__ = ["episode_metrics", "evaluate_envs", "run_evaluation"]

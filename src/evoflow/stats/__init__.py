"""Statistics of the project's reports: rates, intervals, paired comparisons.

This package is the only place where the project computes statistics; reports
and tables call it and never compute an interval or a p-value themselves. Every
function is pure: it takes plain mappings of task results, returns a frozen
dataclass, and draws any random resample from a ``numpy.random.Generator``
seeded by its ``seed`` argument (never the global random state).

A task result is keyed ``(env, task_id)`` and valued in [0, 1]: 0/1 for one
episode, the fraction won where a task was played several times. Pooled success
weights every test task of every env equally, and bootstrap intervals resample
tasks within their env, so each env keeps its share of the pool.

- ``proportion``: k of n with its Wilson score interval.
- ``task_mean``: mean of fractional task values, stratified bootstrap interval.
- ``paired_difference``: A minus B over shared tasks; stratified bootstrap
  interval, exact McNemar or sign-flip permutation p-value.
- ``pooled_over_runs`` / ``paired_over_runs``: the same over several runs
  (seeds), with a crossed bootstrap (runs, and one resample of the tasks
  within env shared by every drawn run, since seeds share their test tasks)
  and, for the paired case, a sign-flip test of each task's share of the mean
  difference, and a t-test of the runs' own differences.
- ``seed_mean`` / ``paired_seeds``: one number per seed (a run's accuracy),
  the mean over seeds with its Student's t interval and t-test.
"""

from __future__ import annotations

from evoflow.stats.paired import PairedDifference, paired_difference
from evoflow.stats.proportion import Estimate, Proportion, proportion, task_mean
from evoflow.stats.runs import RunEstimate, paired_over_runs, pooled_over_runs
from evoflow.stats.student import SeedMean, paired_seeds, seed_mean

__all__ = [
    "Estimate",
    "PairedDifference",
    "Proportion",
    "RunEstimate",
    "SeedMean",
    "paired_difference",
    "paired_over_runs",
    "paired_seeds",
    "pooled_over_runs",
    "proportion",
    "seed_mean",
    "task_mean",
]

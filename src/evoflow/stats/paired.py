"""Method A against method B, paired over the test tasks both played.

Pairing removes the spread between tasks (an easy task is easy for both
methods), so a difference in pooled success that two independent intervals
would blur can still be told from zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from evoflow.stats._inputs import (
    EQUAL,
    Scores,
    check_draws,
    check_level,
    is_binary,
    pooled_mean,
    shared_pairs,
)
from evoflow.stats.bootstrap import stratified_interval

MCNEMAR = "McNemar exact"
SIGN_FLIP = "sign-flip permutation"


@dataclass(frozen=True)
class PairedDifference:
    """Pooled success of A minus that of B over their shared test tasks.

    Attributes
    ----------
    difference
        Mean over shared tasks of A's success minus B's, in [-1, 1].
    low, high
        Percentile interval of the stratified bootstrap, in [-1, 1].
    p_value
        Two-sided p-value of "no difference", from ``test``.
    test
        ``"McNemar exact"`` (all values 0/1) or ``"sign-flip permutation"``.
    tasks
        Number of shared tasks.
    envs
        Their envs, sorted.
    a_only, b_only
        Tasks only A solved and tasks only B solved (the discordant pairs);
        None when some value is fractional.
    draws, level
        Bootstrap resamples and confidence level of the interval.
    """

    difference: float
    low: float
    high: float
    p_value: float
    test: str
    tasks: int
    envs: tuple[str, ...]
    a_only: int | None
    b_only: int | None
    draws: int
    level: float


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact McNemar p-value: two-sided binomial test of the discordant pairs.

    Under "no difference" each discordant task is as likely to favour A as B,
    so ``a_only`` is Binomial(a_only + b_only, 1/2). 1.0 when no task is
    discordant.
    """
    discordant = a_only + b_only
    if discordant == 0:
        return 1.0
    return float(stats.binomtest(a_only, discordant, 0.5).pvalue)


def sign_flip_p(differences: np.ndarray, draws: int, seed: int) -> float:
    """Two-sided p-value of the mean difference under random sign flips.

    ``scipy.stats.permutation_test`` with one sample and
    ``permutation_type="samples"`` flips the sign of each task's difference
    independently; it enumerates all ``2**tasks`` flips exactly when that is
    at most ``draws``, else draws ``draws`` of them at random.
    """
    # float residue of averaging (a task +0.2 in one run, -0.2 in another) is
    # no difference: left in, it would count as a sign in every flip
    differences = np.where(np.abs(differences) <= EQUAL, 0.0, differences)
    if not np.any(differences):
        return 1.0
    result = stats.permutation_test(
        (differences,),
        lambda d, axis=-1: np.mean(d, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=draws,
        alternative="two-sided",
        axis=-1,
        rng=np.random.default_rng(seed),
    )
    return float(min(1.0, result.pvalue))


def _test(
    values_a: np.ndarray, values_b: np.ndarray, draws: int, seed: int
) -> tuple[float, str, int | None, int | None]:
    """``(p_value, test, a_only, b_only)`` for paired task values.

    Exact McNemar where every value is 0/1, else the sign-flip permutation test
    (no discordant counts).
    """
    if is_binary(values_a) and is_binary(values_b):
        a_only = int(np.sum((values_a == 1.0) & (values_b == 0.0)))
        b_only = int(np.sum((values_a == 0.0) & (values_b == 1.0)))
        return mcnemar_exact(a_only, b_only), MCNEMAR, a_only, b_only
    return sign_flip_p(values_a - values_b, draws, seed), SIGN_FLIP, None, None


def paired_difference(
    a: Scores,
    b: Scores,
    level: float = 0.95,
    draws: int = 10_000,
    seed: int = 0,
) -> PairedDifference:
    """Paired difference in success of method A over method B.

    Parameters
    ----------
    a, b
        Task key ``(env, task_id)`` -> that task's success for A and for B:
        0/1, or a fraction in [0, 1]. Only keys in both count.
    level
        Confidence level of the interval, in (0, 1).
    draws
        Bootstrap resamples (and random sign flips, where not exact).
    seed
        Seed of the ``numpy.random.Generator`` behind both.

    Returns
    -------
    PairedDifference
        The mean over shared tasks of ``a - b`` (each task weighted equally,
        so A's pooled success minus B's on those tasks). Interval:
        ``scipy.stats.bootstrap`` resampling tasks within each env, each env
        keeping its size, percentile method; zero width where every env's
        differences are all equal. p-value: exact McNemar when every value is
        0/1, else a sign-flip permutation test.

    Raises
    ------
    ValueError
        When no task is shared, a value lies outside [0, 1], a key is not
        ``(env, task_id)``, ``level`` lies outside (0, 1) or ``draws`` is not a
        positive integer.
    """
    level, draws = check_level(level), check_draws(draws)
    groups_a, groups_b = shared_pairs(a, b, "paired_difference")
    differences = {env: groups_a[env] - groups_b[env] for env in groups_a}
    low, high = stratified_interval(differences, level, draws, seed)
    values_a = np.concatenate(list(groups_a.values()))
    values_b = np.concatenate(list(groups_b.values()))
    p_value, test, a_only, b_only = _test(values_a, values_b, draws, seed)
    return PairedDifference(
        difference=pooled_mean(differences),
        low=low,
        high=high,
        p_value=p_value,
        test=test,
        tasks=int(values_a.size),
        envs=tuple(differences),
        a_only=a_only,
        b_only=b_only,
        draws=draws,
        level=level,
    )

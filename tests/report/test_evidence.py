"""Which methods a report compares, and how a comparison reads (hand-worked)."""

from __future__ import annotations

import pytest

from evoflow.config import validate_config
from evoflow.methods import methods_from_config
from evoflow.report.evidence import (
    compare,
    comparisons_markdown,
    planned_pairs,
    verdict,
)
from evoflow.report.outcomes import Outcomes
from evoflow.stats import paired_difference


def configured(methods: dict) -> dict:
    config = validate_config({"experiment": "x", "envs": {"maze": {}},
                              "fed": {"rounds": 2}, "methods": methods})  # fmt: skip
    return methods_from_config(config)


def test_pairs_follow_the_kinds_then_the_references():
    # Prepare
    methods = configured({"pretrained": {}, "random": {}, "fedit": {},
                          "fedit_matched": {}, "fedse": {}, "fedse_no_filter": {}})  # fmt: skip

    # Execute
    pairs = planned_pairs(methods)

    # Assert: the kinds' own comparisons first, each once, then every trained
    # method against Pre-Trained and Random
    assert pairs[:4] == [("fedit_matched", "fedit"), ("fedse", "fedit"),
                         ("fedse", "fedit_matched"), ("fedse_no_filter", "fedse")]  # fmt: skip
    assert pairs[4:] == [(m, ref) for m in ("fedit", "fedit_matched", "fedse",
                                            "fedse_no_filter")
                         for ref in ("pretrained", "random")]  # fmt: skip


def test_a_comparison_is_paired_over_shared_tasks_only():
    # Prepare: A solves m0, m1, m2; B solves m0 only; B also played m9
    a = Outcomes({("maze", f"m{i}"): (int(i < 3), 1) for i in range(5)})
    b = Outcomes({("maze", "m0"): (1, 1), **{("maze", f"m{i}"): (0, 1) for i in
                  (1, 2, 3, 4, 9)}})  # fmt: skip

    # Execute
    [found] = compare({"a": a, "b": b}, [("a", "b")])

    # Assert: 5 shared tasks, 2 discordant for A, none for B: +40 points,
    # McNemar p = 2 * (1/2)^2 = 0.5, not resolved
    r = found.result
    assert (r.tasks, r.a_only, r.b_only) == (5, 2, 0)
    assert r.difference == pytest.approx(0.4) and r.p_value == pytest.approx(0.5)
    assert verdict(r) == "not resolved"
    row = comparisons_markdown([found], {"a": "A", "b": "B"}).splitlines()[2]
    assert (
        row.startswith("| A − B | +40.0 | [")
        and "| 0.500 | McNemar exact | 2 / 0 |" in row
    )


def test_a_verdict_needs_the_interval_and_the_test_on_one_side():
    # Prepare: 20 tasks, A alone solves 12 -> interval above 0, p tiny
    a = {("maze", str(i)): float(i < 12) for i in range(20)}
    b = {("maze", str(i)): 0.0 for i in range(20)}

    # Execute / Assert
    assert verdict(paired_difference(a, b, draws=2000)) == "A ahead"
    assert verdict(paired_difference(b, a, draws=2000)) == "B ahead"
    assert verdict(paired_difference(a, a, draws=2000)) == "not resolved"

"""Helmsman's tables over partition seeds: t intervals and seed-paired
differences against FedAvg, on records worked by hand."""

from __future__ import annotations

import pytest

from evoflow.report.helmsman import cell, comparisons_csv, comparisons_table


def records(strategy: str, metrics: list[float | None]) -> list[dict]:
    """One run.json record per seed; None: the run failed (no metric)."""
    out = []
    for seed, metric in enumerate(metrics):
        record = {
            "task": "Q4",
            "strategy": strategy,
            "seed": seed,
            "verdict": "SUCCESS",
        }
        if metric is None:
            record["verdict"] = "FAIL_RUNTIME"
        else:
            record["metric"] = metric
        out.append(record)
    return out


def q4(fedprox: list[float], fednova: list[float]) -> dict:
    """Q4's three runs per seed; FedAvg scores 50, 70, 90 in seeds 0-2."""
    return {("Q4", "fedavg"): records("fedavg", [50.0, 70.0, 90.0]),
            ("Q4", "fedprox"): records("fedprox", fedprox),
            ("Q4", "specialised"): records("fednova", fednova)}  # fmt: skip


def test_a_cell_is_the_mean_with_its_t_interval_over_seeds():
    # 60, 70, 80: mean 70, sd 10; t(0.975, 2 df) = 4.3027, half-width 24.84
    assert cell(records("fedavg", [60.0, 70.0, 80.0])) == "70.00 [45.16, 94.84]"
    assert cell(records("fedavg", [60.0])) == "60.00"
    assert cell(records("fedavg", [60.0, None])) == "FAIL_RUNTIME 1/2"


def test_differences_against_fedavg_are_taken_within_each_seed():
    # Prepare: the seeds' levels differ by 20 points; FedProx is 1 point ahead in
    # every seed, FedNova (Q4's specialised) +3, -1, +1 (mean +1, sd 2,
    # half-width 4.3027 * 2 / sqrt 3 = 4.97; t = sqrt 3 / 2 on 2 df, p = 1 -
    # t / sqrt(2 + t^2) = 1 - sqrt(3 / 11))
    found = q4([51.0, 71.0, 91.0], [53.0, 69.0, 91.0])

    # Execute
    header, prox, nova = comparisons_table(found, ["Q4"])

    # Assert
    assert header[1] == "A − FedAvg"
    assert prox == [
        "Q4",
        "FedProx",
        "3",
        "+1.00",
        "[+1.00, +1.00]",
        "–",  # the same +1 in every seed: no spread, no t-test
        "3 of 3",
        "not resolved",  # no test, no verdict
    ]
    assert nova[:4] == ["Q4", "Specialised", "3", "+1.00"]
    assert nova[4] == "[-3.97, +5.97]"
    assert float(nova[5]) == pytest.approx(1 - (3 / 11) ** 0.5, abs=5e-4)
    assert nova[6] == "2 of 3"
    assert nova[7] == "not resolved"  # p = 0.48


def test_a_verdict_needs_the_interval_clear_of_zero_and_p_below_005():
    # FedNova +3, +5, +4 over FedAvg: mean 4, sd 1, half-width 4.3027 / sqrt 3
    # = 2.484; t = 4 sqrt 3 = 6.928 on 2 df, p = 1 - t / sqrt(2 + t^2) = 0.0202041.
    # FedProx -4, -5, -3: the mirror image, behind.
    found = q4([46.0, 65.0, 87.0], [53.0, 75.0, 94.0])
    _, prox, nova = comparisons_table(found, ["Q4"])
    assert nova[3:] == ["+4.00", "[+1.52, +6.48]", "0.020", "3 of 3", "ahead of FedAvg"]
    assert prox[3:] == ["-4.00", "[-6.48, -1.52]", "0.020", "0 of 3", "behind FedAvg"]
    lines = comparisons_csv(found, ["Q4"]).splitlines()
    assert lines[0] == "task,problem,column,method,seeds,mean,low,high,p,ahead,verdict"
    assert lines[2] == (
        "Q4,Domain Shift,specialised,FedNova,3,4.0000,1.5159,6.4841,0.0202041,3,"
        "ahead of FedAvg"
    )


def test_a_two_sided_p_between_005_and_010_is_not_resolved():
    # FedProx +1, +2, +3: mean 2, sd 1, interval 2 -+ 2.484 = [-0.48, +4.48];
    # t = 2 sqrt 3 = 3.464, two-sided p = 1 - t / sqrt 14 = 0.0742 (one-sided
    # 0.037 would pass). FedNova scores FedAvg's metric in every seed.
    found = q4([51.0, 72.0, 93.0], [50.0, 70.0, 90.0])
    _, prox, nova = comparisons_table(found, ["Q4"])
    assert prox[3:] == ["+2.00", "[-0.48, +4.48]", "0.074", "3 of 3", "not resolved"]
    assert nova[3:] == [
        "+0.00",
        "[+0.00, +0.00]",
        "–",
        "0 of 3",
        "identical in every seed",
    ]
    lines = comparisons_csv(found, ["Q4"]).splitlines()
    assert lines[2].endswith(",0.0000,0.0000,0.0000,,0,identical in every seed")


def test_a_failed_seed_leaves_the_pair_out_of_that_seed():
    found = {("Q4", "fedavg"): records("fedavg", [50.0, None, 90.0]),
             ("Q4", "fedprox"): records("fedprox", [52.0, 71.0, 92.0])}  # fmt: skip
    _, prox = comparisons_table(found, ["Q4"])
    assert prox[2:4] == ["2", "+2.00"]

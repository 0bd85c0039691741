"""The phenomena report: a study's claims pooled over its seeds' reports."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from evoflow.cli import main
from evoflow.config import load_config, validate_config
from evoflow.errors import ConfigError
from evoflow.report.helmsman import comparisons_csv
from evoflow.report.phenomena import markdown, measure, phenomena_report, verdict
from evoflow.stats import RunEstimate
from evoflow.study import Claim, study_of
from tests.report.test_helmsman_report import q4

HEADER = "method,round,env,task,successes,episodes\n"
HELMSMAN = "config/study/helmsman.yaml"


def config(seeds=(100, 101, 102), claims=None):
    claims = claims or [{"claim": "A beats B", "a": "fedse", "b": "fedit"}]
    return validate_config({"experiment": "st", "envs": {"maze": {}},
                            "methods": {"fedse": {}, "fedit": {}},
                            "study": {"seeds": list(seeds), "claims": claims}})  # fmt: skip


def seed_report(root, seed, fedse, fedit):
    """A seed's report: 4 maze tasks, per-task successes of both methods."""
    folder = root / f"st-s{seed}"
    folder.mkdir(parents=True)
    lines = [f"{m},5,maze,t{i},{v},1" for m, values in (("fedse", fedse), ("fedit", fedit))
             for i, v in enumerate(values)]  # fmt: skip
    (folder / "outcomes.csv").write_text(HEADER + "\n".join(lines) + "\n")


def test_a_claim_is_pooled_over_the_seeds_that_finished(tmp_path):
    # Prepare: seed 100 A +50 points, seed 101 A +25, seed 102 not run yet
    study = study_of(config())
    seed_report(tmp_path, 100, [1, 1, 1, 0], [1, 0, 0, 0])
    seed_report(tmp_path, 101, [1, 1, 0, 0], [1, 0, 0, 0])
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "study.json").write_text(json.dumps({"seeds": {"100": 600,
                                                                       "101": 540}}))  # fmt: skip

    # Execute
    [found] = measure(study, tmp_path)

    # Assert: mean of +0.5 and +0.25; 8 shared tasks; 19 minutes
    assert found.estimate.per_run == pytest.approx((0.5, 0.25))
    assert found.estimate.mean == pytest.approx(0.375)
    assert (found.seeds, found.missing, found.tasks) == (2, (102,), 8)
    text = markdown([found])
    assert "| st | A beats B (fedse − fedit) | +37.5 |" in text
    # p over seeds: a t-test of +0.5 and +0.25 on 1 df, t = 0.375 / 0.125 = 3,
    # whose two-sided p is 1 - 2 atan(t) / pi = 0.205 (Cauchy's CDF)
    assert found.estimate.p_runs == pytest.approx(1 - 2 * math.atan(3) / math.pi)
    assert "| 0.205 | 2 (1 missing) |" in text
    # t interval over the two seeds: 37.5 -+ tan(0.475 pi) * 12.5 (Student's t
    # with 1 df is Cauchy, whose 97.5 % quantile is tan(0.475 pi) = 12.706)
    half = math.tan(0.475 * math.pi) * 12.5
    assert f"| [{37.5 - half:+.1f}, {37.5 + half:+.1f}] |" in text
    assert "| [-121.3, +196.3] |" in text
    assert "| 2 (1 missing) | 8 | 19 min |" in text


def test_seeds_that_agree_exactly_show_no_t_interval(tmp_path):
    # Prepare: both seeds A +25 points (no spread), and both exactly even
    study = study_of(config(seeds=(100, 101)))
    for seed in (100, 101):
        seed_report(tmp_path, seed, [1, 1, 0, 0], [1, 0, 0, 0])
    even = study_of(config(seeds=(100, 101)))

    # Execute
    [found] = measure(study, tmp_path)
    text = markdown([found])

    # Assert: no zero-width "[+25.0, +25.0]" and no p over seeds, so no verdict
    row = next(line for line in text.splitlines() if line.startswith("| st |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "+25.0"
    assert "[+25.0, +25.0]" not in row
    assert cells[4] == "–" and cells[6] == "–"  # t interval, p (seeds)
    assert cells[-1] == "not resolved at this scale"
    # all-zero differences keep their interval [+0.0, +0.0] and p 1
    for seed in (100, 101):
        seed_report(tmp_path / "even", seed, [1, 0, 0, 0], [1, 0, 0, 0])
    row = markdown(measure(even, tmp_path / "even")).splitlines()[2]
    assert "| [+0.0, +0.0] |" in row and "| 1.000 |" in row


def test_verdicts_follow_the_papers_direction():
    # Prepare: an interval above zero with p < 0.05, and one that spans zero
    above = RunEstimate(0.3, 0.1, 0.5, 5, (), 0.01, "t", 0.95, 100, p_runs=0.02)
    spans = RunEstimate(0.1, -0.1, 0.3, 5, (), 0.3, "t", 0.95, 100, p_runs=0.4)
    weak = RunEstimate(0.3, 0.1, 0.5, 2, (), 0.2, "t", 0.95, 100, p_runs=0.03)
    # the tasks' test passes but the seeds disagree: one chain's luck
    chains = RunEstimate(-0.24, -0.42, -0.07, 3, (), 0.0001, "t", 0.95, 100,
                         p_runs=0.145)  # fmt: skip
    one_seed = RunEstimate(0.3, 0.1, 0.5, 1, (), 0.01, "t", 0.95, 100)

    # Assert
    assert verdict(Claim("x", "a", "b", "greater"), above) == "holds"
    assert verdict(Claim("x", "a", "b", "less"), above) == "reversed"
    for estimate in (spans, weak, chains, one_seed):
        assert verdict(Claim("x", "a", "b"), estimate) == "not resolved at this scale"
    assert verdict(Claim("x", "a", "b"), None) == "not run"


def test_a_study_names_what_is_wrong_with_it():
    with pytest.raises(ConfigError, match="'nope' is not a configured method"):
        study_of(config(claims=[{"claim": "x", "a": "nope", "b": "fedit"}]))
    for side in ("fedse@last", "fedse@00", "fedse@²"):  # reports write fedse@0
        with pytest.raises(ConfigError, match=f"'{side}' names no round"):
            study_of(config(claims=[{"claim": "x", "a": "fedse", "b": side}]))
    with pytest.raises(ConfigError, match="'nope' is not a configured method"):
        study_of(config(claims=[{"claim": "x", "a": "nope@0", "b": "fedit"}]))
    with pytest.raises(ConfigError, match="repeats a seed"):
        study_of(config(seeds=(100, 100)))
    with pytest.raises(ConfigError, match="seed 0 is the config's own seed"):
        study_of(config(seeds=(0, 1)))
    with pytest.raises(ConfigError, match="no 'study' section"):
        study_of(validate_config({"experiment": "x", "envs": {"maze": {}}}))


def test_a_claim_whose_method_a_seed_lacks_is_named_not_fatal(tmp_path):
    # Prepare: the second claim names a method no seed's report holds
    claims = [{"claim": "A beats B", "a": "fedse", "b": "fedit"},
              {"claim": "A beats C", "a": "fedse", "b": "local"}]  # fmt: skip
    cfg = validate_config({"experiment": "st", "envs": {"maze": {}},
                           "methods": {"fedse": {}, "fedit": {}, "local": {}},
                           "study": {"seeds": [100], "claims": claims}})  # fmt: skip
    seed_report(tmp_path, 100, [1, 1, 1, 0], [1, 0, 0, 0])

    # Execute
    first, second = measure(study_of(cfg), tmp_path)

    # Assert: the first claim is measured, the second says why it is not
    assert first.estimate is not None and first.problem == ""
    assert second.estimate is None and "'local' is not in" in second.problem
    assert "'local' is not in" in markdown([first, second])


def test_helmsmans_study_is_a_section_of_its_own(tmp_path):
    # Prepare: the study's report, written by the report's own CSV writer from
    # three seeds' records (worked in tests/report/test_helmsman_report.py):
    # Q4's FedNova +3, +5, +4 over FedAvg: +4 [+1.5, +6.5], p 0.020; FedProx
    # the same +1 in every seed (no spread, no test)
    found = q4([51.0, 71.0, 91.0], [53.0, 75.0, 94.0])
    folder = tmp_path / "study-helmsman"
    folder.mkdir()
    (folder / "helmsman_comparisons.csv").write_text(comparisons_csv(found, ["Q4"]))
    seed_report(tmp_path, 100, [1, 1, 1, 0], [1, 0, 0, 0])  # a claims study beside it
    claims = tmp_path / "st.yaml"
    claims.write_text(yaml.safe_dump(config(seeds=(100,))))

    # Execute
    text = phenomena_report([str(claims), HELMSMAN], tmp_path)
    absent = phenomena_report([HELMSMAN], tmp_path / "nothing")

    # Assert: the claims table, then the specialised row with its interval and
    # FedProx in one sentence
    assert text.startswith("| Study | Paper's claim |")
    assert "| st | A beats B (fedse − fedit) | +50.0 |" in text
    section = text[text.index("## study-helmsman: AgentFL-Bench's baselines") :]
    row = "| Q4 | Domain Shift | FedNova | +4.0 | [+1.5, +6.5] | 0.020 | 3 of 5 | ahead of FedAvg |"
    assert row in section
    assert (
        "FedProx − FedAvg on 1 task: 1 not resolved; the largest mean difference 1.00"
        in section
    )
    assert "No " in absent and "helmsman_comparisons.csv: run the study" in absent
    # FedNova +4 in every seed: no zero-width "[+4.0, +4.0]", no p
    flat = q4([51.0, 71.0, 91.0], [54.0, 74.0, 94.0])
    (folder / "helmsman_comparisons.csv").write_text(comparisons_csv(flat, ["Q4"]))
    text = phenomena_report([HELMSMAN], tmp_path)
    assert "| Q4 | Domain Shift | FedNova | +4.0 | – | – | 3 of 5 |" in text


def test_studies_kept_apart_are_each_read_from_the_folder_that_holds_them(tmp_path):
    # Prepare: Helmsman's study kept in one folder, the claims study's two
    # seeds (+50 and +25 points, worked above) in a second, an empty third
    helmsman, claims_kept, empty = (tmp_path / n for n in ("h", "c", "e"))
    (helmsman / "study-helmsman").mkdir(parents=True)
    (helmsman / "study-helmsman" / "helmsman_comparisons.csv").write_text(
        comparisons_csv(q4([51.0, 71.0, 91.0], [53.0, 75.0, 94.0]), ["Q4"])
    )
    seed_report(claims_kept, 100, [1, 1, 1, 0], [1, 0, 0, 0])
    seed_report(claims_kept, 101, [1, 1, 0, 0], [1, 0, 0, 0])
    claims = tmp_path / "st.yaml"
    claims.write_text(yaml.safe_dump(config(seeds=(100, 101))))

    # Execute: the command with three folders, the function with the other
    # order, then with neither holding a study
    out = tmp_path / "phenomena.md"
    args = ["phenomena", str(claims), HELMSMAN, "--out", str(out), "--reports",
            str(empty), str(helmsman), "--reports", str(claims_kept)]  # fmt: skip
    code = main(args)
    reversed_order = phenomena_report([str(claims), HELMSMAN], [claims_kept, helmsman])
    neither = phenomena_report([str(claims), HELMSMAN], [empty])

    # Assert: each study found where it is kept, whatever the order
    assert code == 0
    for text in (out.read_text(), reversed_order):
        assert "| st | A beats B (fedse − fedit) | +37.5 |" in text
        assert "| Q4 | Domain Shift | FedNova | +4.0 |" in text
    assert "| 0 (2 missing) |" in neither and "run the study" in neither


def test_a_study_run_over_two_sittings_pools_the_seeds_of_both_folders(tmp_path):
    # Prepare: seed 100 (+50 points, 10 min) kept from a first sitting, seeds
    # 101 (+25, 9 min) and 102 (+0, 8 min) from a second; the second sitting's
    # folder also holds a stale copy of seed 100 (-100), listed after the first
    first, second = tmp_path / "sitting1", tmp_path / "sitting2"
    seed_report(first, 100, [1, 1, 1, 0], [1, 0, 0, 0])
    seed_report(second, 100, [0, 0, 0, 0], [1, 1, 1, 1])
    seed_report(second, 101, [1, 1, 0, 0], [1, 0, 0, 0])
    seed_report(second, 102, [1, 0, 0, 0], [1, 0, 0, 0])
    for folder, times in ((first, {"100": 600}), (second, {"100": 1, "101": 540,
                                                           "102": 480})):  # fmt: skip
        (folder / "st").mkdir()
        (folder / "st" / "study.json").write_text(json.dumps({"seeds": times}))
    # an interrupted first sitting left seed 102's report folder empty
    (first / "st-s102").mkdir()

    # Execute
    [found] = measure(study_of(config()), [first, second])

    # Assert: +50, +25 and +0 from where each seed is first found; 27 minutes
    assert found.estimate.per_run == pytest.approx((0.5, 0.25, 0.0))
    assert (found.seeds, found.missing, found.tasks) == (3, (), 12)
    assert found.wall_seconds == 600 + 540 + 480
    assert "| 3 | 12 | 27 min |" in markdown([found])

    # Execute: the second sitting's record lost (its reports kept)
    (second / "st" / "study.json").unlink()
    [partly] = measure(study_of(config()), [first, second])

    # Assert: the time shown says how many of the seeds it covers
    assert "| 3 | 12 | 10 min (1 of 3 seeds timed) |" in markdown([partly])


def test_only_a_marked_helmsman_study_is_reported():
    # config/helmsman.yaml's seeds chose a setting: it is not a study
    with pytest.raises(ConfigError, match="no 'study' section"):
        phenomena_report(["config/helmsman.yaml"])
    with pytest.raises(ConfigError, match="runs its seeds inside one experiment"):
        study_of(load_config(HELMSMAN), HELMSMAN)


def test_a_claim_can_name_an_earlier_round_of_a_method(tmp_path):
    # Prepare: each seed's report also holds Fed-SE's round-0 evaluation (the
    # start it trained from): seed 100 +50 points over it, seed 101 +25
    claims = [{"claim": "Fed-SE above its start", "a": "fedse", "b": "fedse@0"}]
    study = study_of(config(seeds=(100, 101), claims=claims))
    for seed, start in ((100, [1, 0, 0, 0]), (101, [1, 1, 0, 0])):
        seed_report(tmp_path, seed, [1, 1, 1, 0], [0, 0, 0, 0])
        with (tmp_path / f"st-s{seed}" / "outcomes.csv").open("a") as out:
            out.writelines(f"fedse,0,maze,t{i},{v},1\n" for i, v in enumerate(start))

    # Execute
    [found] = measure(study, tmp_path)

    # Assert: round 5 (the final) against round 0, paired per seed over 4 tasks
    assert found.estimate.per_run == pytest.approx((0.5, 0.25))
    assert found.tasks == 8 and found.problem == ""
    assert "(fedse − fedse@0) | +37.5 |" in markdown([found])
    (tmp_path / "st-s101" / "outcomes.csv").write_text(HEADER + "fedse,5,maze,t0,1,1\n")
    [lacking] = measure(study, tmp_path)
    assert lacking.estimate is None and "'fedse@0' is not in" in lacking.problem

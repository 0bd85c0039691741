"""Per-rule job time from Snakemake benchmark files (hand-written TSVs)."""

from __future__ import annotations

import pytest

from evoflow.errors import EvoflowError
from evoflow.report.timing import rule_times, timing_markdown

HEADER = (
    "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
)


def bench(root, rel, seconds, rss):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        HEADER + f"{seconds}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t90\t{seconds}\n"
    )


def test_rule_times_sum_jobs_per_rule_and_keep_the_peak_memory(tmp_path):
    bench(tmp_path, "explore/fedse/round=1/a.tsv", 30.0, 900.5)
    bench(tmp_path, "explore/fedse/round=2/a.tsv", 50.0, 1200.0)
    bench(tmp_path, "evaluate/fedse/round=2/evaluate.tsv", 120.0, "NA")
    rules = rule_times(tmp_path)
    assert rules["explore"] == {"jobs": 2, "seconds": 80.0, "max_rss_mb": 1200.0}
    assert rules["evaluate"]["seconds"] == 120.0
    table = timing_markdown(rules).splitlines()
    # 120 of 200 s = 60 %, 80 of 200 s = 40 %; costliest first
    assert table[2] == "| evaluate | 1 | 120 | 60 | 0 |"
    assert table[3] == "| explore | 2 | 80 | 40 | 1200 |"
    assert table[4] == "| all | 3 | 200 | 100 | |"


def test_rule_times_name_what_is_missing_or_not_a_benchmark(tmp_path):
    with pytest.raises(EvoflowError, match="no benchmark files"):
        rule_times(tmp_path)
    (tmp_path / "explore").mkdir()
    (tmp_path / "explore" / "x.tsv").write_text("seconds\n3\n")
    with pytest.raises(EvoflowError, match="not a Snakemake benchmark file"):
        rule_times(tmp_path)

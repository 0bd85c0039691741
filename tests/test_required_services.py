"""Tests that need a real service fail instead of skipping where they must run."""

from __future__ import annotations

import pytest

from tests.helpers import service_required
from tests.slurm.conftest import cluster_unavailable


@pytest.mark.parametrize(
    "ci, flag, required",
    [
        (None, None, False),
        ("true", None, True),
        ("1", None, True),
        ("True", None, True),
        ("false", None, False),
        ("", None, False),
        (None, "1", True),
        (None, "0", False),
    ],
)
def test_ci_counts_as_requiring_the_service(monkeypatch, ci, flag, required):
    # Prepare
    for name, value in (("CI", ci), ("EVOFLOW_REQUIRE_SLURM", flag)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)

    # Execute / Assert
    assert service_required("EVOFLOW_REQUIRE_SLURM") is required


def test_a_missing_cluster_fails_on_ci_and_skips_elsewhere(monkeypatch):
    # Prepare
    monkeypatch.delenv("EVOFLOW_REQUIRE_SLURM", raising=False)
    monkeypatch.setenv("CI", "true")

    # Execute / Assert: on CI the run fails, naming the reason
    with pytest.raises(pytest.fail.Exception, match="must run here .* but no root"):
        cluster_unavailable("no root")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no root"):
        cluster_unavailable("no root")

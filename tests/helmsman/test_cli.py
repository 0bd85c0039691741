"""`evoflow helmsman` end to end through the openai backend: scripted agents
(a plan, module specs, code with a bug, a repair) served over HTTP by
evoflow's own policy server; the run's attempts are rows of `evoflow query`."""

from __future__ import annotations

import json
import re

from evoflow.cli import main
from evoflow.helmsman import codebase
from evoflow.policy.server import create_app
from evoflow.store.query import connect
from tests.policy.conftest import run_app  # noqa: F401 - the fixture

from .scripted import ScriptedPolicy

PLAN = "## Summary\nFedAvg.\n## Challenges\ndomains\n## Tasks\ncode\n## Technical Setup\n4 cameras"
BROKEN = ("hidden = np.maximum(", "hidden = np.maxmum(")
QUERY = ("Four cameras, one per visual domain, should learn a shared recogniser from their "
         "images: build a federated system training a small model, evaluated by accuracy.")  # fmt: skip


def agents(agent: str, prompt: str) -> str:
    modules = codebase.baseline()
    if agent == "planner":
        return PLAN
    if agent == "reflector":
        return "COMPLETE"
    if agent == "supervisor":
        return json.dumps({name: f"spec of {name}" for name in codebase.MODULES})
    if agent == "debugger":
        return f"```python\n# file: task.py\n{modules['task.py']}```"
    name = re.search(r"Write (\w+\.py)\.", prompt).group(1)
    code = modules[name].replace(*BROKEN) if name == "task.py" else modules[name]
    return f"```python\n{code}```"


def test_a_query_becomes_a_working_codebase_after_one_repair(run_app, tmp_path, capsys):  # noqa: F811
    policy = ScriptedPolicy(agents)
    url = run_app(create_app(policy))
    args = ["helmsman", QUERY, "--data", "Q4", "--out", str(tmp_path / "run"), "--auto",
            "--model", "scripted", "--base-url", url, "--sandbox-rounds", "3"]  # fmt: skip
    assert main(args) == 0
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["status"] == "SUCCESS" and status["repairs"] == 1
    assert [a for a, _ in policy.calls] == ["planner", "reflector", "supervisor", *["coder"] * 5,
                                            "debugger"]  # fmt: skip
    rows = (
        connect(tmp_path)
        .execute(
            "SELECT attempt, verdict, level FROM helmsman_attempts ORDER BY attempt"
        )
        .fetchall()
    )
    assert rows == [(0, "FAIL", 1), (1, "SUCCESS", None)]
    calls = len(policy.calls)
    assert (
        main(args) == 0 and len(policy.calls) == calls
    )  # a finished run is not redone

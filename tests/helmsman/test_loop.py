"""The plan → code → simulate → diagnose → repair loop, driven by a scripted
model (canned plans, code and patches) on real sandboxed runs."""

from __future__ import annotations

import json
import re

import pytest

from evoflow.helmsman import codebase
from evoflow.helmsman.coding import write_codebase
from evoflow.helmsman.llm import AgentLLM, usage
from evoflow.helmsman.refine import attempts, refine
from evoflow.sandbox import Limits

from .scripted import ScriptedPolicy

FAST = Limits(seconds=60, memory_mb=4096, output_kb=4096)
PLAN = "## Summary\nFedAvg.\n## Challenges\nskew\n## Tasks\ncode\n## Technical Setup\n4 clients"
BROKEN = ("hidden = np.maximum(", "hidden = np.maxmum(")  # AttributeError in task.py


def block(name: str, code: str) -> str:
    return f"Here it is.\n```python\n# file: {name}\n{code}```\n"


def coder_script(broken: bool):
    modules = codebase.baseline()
    if broken:
        modules["task.py"] = modules["task.py"].replace(*BROKEN)

    def script(agent: str, prompt: str) -> str:
        if agent == "supervisor":
            return json.dumps({name: f"spec of {name}" for name in codebase.MODULES})
        name = re.search(r"Write (\w+\.py)\.", prompt).group(1)
        return block(name, modules[name])

    return script


def test_coders_write_in_dependency_order_and_see_what_they_build_on(tmp_path):
    policy = ScriptedPolicy(coder_script(broken=False))
    modules, blueprint, notes = write_codebase(
        PLAN, AgentLLM(policy, tmp_path / "calls.jsonl")
    )
    coders = [
        re.search(r"Write (\w+\.py)\.", p).group(1)
        for a, p in policy.calls
        if a == "coder"
    ]
    assert coders == [
        "task.py",
        "strategy.py",
        "client_app.py",
        "server_app.py",
        "run.py",
    ]
    prompts = {
        re.search(r"Write (\w+\.py)\.", p).group(1): p
        for a, p in policy.calls
        if a == "coder"
    }
    assert (
        "def load_client" not in prompts["strategy.py"]
    )  # strategy does not wait for task
    assert (
        "def load_client" in prompts["client_app.py"]
        and "def build_strategy" in prompts["server_app.py"]
    )
    assert (
        modules == codebase.baseline()
        and not notes
        and blueprint["task.py"] == "spec of task.py"
    )


def _debugger(fix_at: int | None):
    """A debugger that returns the broken module until repair ``fix_at``."""
    state = {"calls": 0}
    good = codebase.baseline()["task.py"]

    def script(agent: str, prompt: str) -> str:
        state["calls"] += 1
        fixed = fix_at is not None and state["calls"] >= fix_at
        return block("task.py", good if fixed else good.replace(*BROKEN))

    return script


def _broken_modules() -> dict[str, str]:
    modules = codebase.baseline()
    modules["task.py"] = modules["task.py"].replace(*BROKEN)
    return modules


def test_a_bug_fixed_on_the_second_repair_succeeds_after_two(
    tmp_path, digits_npz, run_config
):
    policy = ScriptedPolicy(_debugger(fix_at=2))
    llm = AgentLLM(policy, tmp_path / "calls.jsonl")
    status = refine(
        tmp_path / "Q1", _broken_modules(), digits_npz, run_config, llm, limits=FAST
    )
    assert status["status"] == "SUCCESS" and status["repairs"] == 2
    records = attempts(tmp_path / "Q1")
    assert [r["diagnosis"]["verdict"] for r in records] == ["FAIL", "FAIL", "SUCCESS"]
    assert "AttributeError" in records[0]["report"]
    assert (
        "AttributeError" in policy.calls[0][1]
    )  # the debugger was shown the diagnosis
    assert status["accuracy"] > 0.5


def test_a_bug_never_fixed_spends_exactly_the_budget(tmp_path, digits_npz, run_config):
    policy = ScriptedPolicy(_debugger(fix_at=None))
    llm = AgentLLM(policy, tmp_path / "calls.jsonl")
    status = refine(
        tmp_path / "Q1", _broken_modules(), digits_npz, run_config, llm, limits=FAST
    )
    assert status["status"] == "FAIL_BUDGET" and status["repairs"] == 10
    assert policy.count("debugger") == 10
    assert len(attempts(tmp_path / "Q1")) == 11  # the first run and ten repairs
    again = refine(
        tmp_path / "Q1", _broken_modules(), digits_npz, run_config, llm, limits=FAST
    )
    assert (
        again == status and policy.count("debugger") == 10
    )  # a finished task is not redone


class Killed(BaseException):
    """Stands for the job being killed mid-loop."""


def test_a_loop_killed_mid_way_resumes_at_the_recorded_attempt(
    tmp_path, digits_npz, run_config
):
    fix = _debugger(fix_at=4)

    def dies_at_third(agent, prompt):
        if len(first.calls) == 3:
            raise Killed
        return fix(agent, prompt)

    first = ScriptedPolicy(dies_at_third)
    with pytest.raises(Killed):
        refine(tmp_path / "Q1", _broken_modules(), digits_npz, run_config,
               AgentLLM(first, tmp_path / "calls.jsonl"), limits=FAST)  # fmt: skip
    assert [r["attempt"] for r in attempts(tmp_path / "Q1")] == [0, 1, 2]
    second = ScriptedPolicy(fix)
    status = refine(tmp_path / "Q1", _broken_modules(), digits_npz, run_config,
                    AgentLLM(second, tmp_path / "calls.jsonl"), limits=FAST)  # fmt: skip
    assert status["status"] == "SUCCESS" and status["repairs"] == 4
    assert second.count("debugger") == 2  # repairs 3 and 4 only; 1 and 2 were kept


BAD_REPLIES = {
    "empty reply": "",
    "no code block": "I would change the learning rate.",
    "missing package": block(
        "task.py", codebase.baseline()["task.py"] + "import torchvisionx\n"
    ),
}


@pytest.mark.parametrize("bad", BAD_REPLIES)
def test_a_bad_repair_is_diagnosed_and_spends_one_attempt(
    bad, tmp_path, digits_npz, run_config
):
    replies = iter([BAD_REPLIES[bad], block("task.py", codebase.baseline()["task.py"])])
    policy = ScriptedPolicy(lambda agent, prompt: next(replies))
    llm = AgentLLM(policy, tmp_path / "calls.jsonl")
    status = refine(
        tmp_path / "Q1", _broken_modules(), digits_npz, run_config, llm, limits=FAST
    )
    assert status["status"] == "SUCCESS" and status["repairs"] == 2
    first_repair = attempts(tmp_path / "Q1")[1]
    words = "ModuleNotFoundError" if bad == "missing package" else "fenced block"
    assert (
        first_repair["diagnosis"]["verdict"] == "FAIL"
        and words in first_repair["report"]
    )


def test_calls_are_logged_per_agent_and_replayed_for_free(tmp_path):
    policy = ScriptedPolicy(coder_script(broken=False))
    write_codebase(PLAN, AgentLLM(policy, tmp_path / "calls.jsonl"))
    totals = usage(tmp_path / "calls.jsonl")
    assert set(totals) == {"supervisor", *(f"coder:{m}" for m in codebase.MODULES)}
    assert all(t["calls"] == 1 and t["completion_tokens"] > 0 for t in totals.values())
    replay = ScriptedPolicy(coder_script(broken=False))
    write_codebase(PLAN, AgentLLM(replay, tmp_path / "calls.jsonl"))
    assert replay.calls == []


def test_the_judge_sends_a_passing_run_back_once(tmp_path, digits_npz, run_config):
    verdicts = iter(["FAIL: the plan asks for FedProx", "PASS"])

    def script(agent, prompt):
        if agent == "judge":
            return next(verdicts)
        return block("strategy.py", codebase.baseline("fedprox")["strategy.py"])

    policy = ScriptedPolicy(script)
    llm = AgentLLM(policy, tmp_path / "calls.jsonl")
    status = refine(tmp_path / "Q1", codebase.baseline(), digits_npz, run_config, llm,
                    limits=FAST, judge=PLAN)  # fmt: skip
    assert status["status"] == "SUCCESS" and status["repairs"] == 1
    first = attempts(tmp_path / "Q1")[0]
    assert first["diagnosis"]["level"] == 2 and "FedProx" in first["report"]
    assert [a for a, _ in policy.calls] == ["judge", "debugger", "judge"]


def test_attempts_of_another_starting_codebase_are_not_resumed(
    tmp_path, digits_npz, run_config
):
    never = ScriptedPolicy(_debugger(fix_at=None))
    llm = AgentLLM(never, tmp_path / "calls.jsonl")
    refine(
        tmp_path / "Q1",
        _broken_modules(),
        digits_npz,
        run_config,
        llm,
        budget=1,
        limits=FAST,
    )
    (tmp_path / "Q1" / "status.json").unlink()  # the code phase ran again (new code)
    fixed = ScriptedPolicy(_debugger(fix_at=1))
    status = refine(tmp_path / "Q1", codebase.baseline(), digits_npz, run_config,
                    AgentLLM(fixed, tmp_path / "other.jsonl"), budget=1, limits=FAST)  # fmt: skip
    assert status["status"] == "SUCCESS" and status["repairs"] == 0  # the new code ran
    assert [r["attempt"] for r in attempts(tmp_path / "Q1")] == [0]

"""The diagnosis on real runs of the baseline codebase with faults put in by
hand: each fault is caught at the level the paper assigns it, a healthy run
passes."""

from __future__ import annotations

import json

import pytest

from evoflow.helmsman import codebase
from evoflow.helmsman.diagnose import Diagnosis, diagnose
from evoflow.helmsman.simulate import simulate
from evoflow.sandbox import Limits, Outcome

FAST = Limits(seconds=60, memory_mb=4096, output_kb=4096)


def _with(module: str, old: str, new: str) -> dict[str, str]:
    modules = codebase.baseline()
    assert old in modules[module], f"{old!r} not in {module}"
    modules[module] = modules[module].replace(old, new)
    return modules


def test_a_healthy_fedavg_run_succeeds(digits_npz, run_config):
    run = simulate(codebase.baseline(), digits_npz, run_config, FAST)
    assert run.diagnosis == Diagnosis("SUCCESS", None), run.diagnosis.report()
    assert run.outcome.isolated


FAULTS = {
    "exception at start": (
        "task.py", "DATA = \"data.npz\"", "DATA = \"data.npz\"\nraise ImportError('no such backbone')",
        1, "ImportError: no such backbone"),
    "client exception, exit 0": (
        "client_app.py", '    sent = msg.content["config"]',
        '    sent = msg.content["config"]\n    assert partition != 2, "bad shard"',
        1, "failing clients"),
    "NaN loss": ("run.py", "config = json.load(handle)",
                 "config = json.load(handle)\n    config['lr'] = float('inf')", 1, "NaN"),
    "no predictions file": ("server_app.py", '    _save("predictions.npz"', '    _save("other.npz"',
                            1, "no predictions.npz"),
    "stagnant accuracy": ("run.py", "config = json.load(handle)",
                          "config = json.load(handle)\n    config['lr'] = 0.0", 2, "stagnant"),
    "zero participation": ("strategy.py", "FedAvg(**task.sampling(config))",
                           'FedAvg(**{**task.sampling(config), "fraction_train": 0.0})', 2,
                           "zero participation"),
}  # fmt: skip


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_caught_at_its_level(fault, digits_npz, run_config):
    module, old, new, level, words = FAULTS[fault]
    run = simulate(_with(module, old, new), digits_npz, run_config, FAST)
    assert run.diagnosis.verdict == "FAIL"
    assert run.diagnosis.level == level, run.diagnosis.report()
    assert words in run.diagnosis.report(), run.diagnosis.report()


def test_accuracy_that_falls_back_diverges(digits_npz, run_config):
    # Gradient ascent from round 5 on: accuracy rises, then falls.
    modules = _with("task.py", 'steps, float(config["lr"]),',
                    'steps, float(config["lr"]) * (1 if server_round <= 5 else -1),')  # fmt: skip
    run = simulate(modules, digits_npz, {**run_config, "rounds": 10}, FAST)
    assert run.diagnosis.level == 2, run.diagnosis.report()
    assert "diverges" in run.diagnosis.report()


def test_a_codebase_without_a_module_is_diagnosed(digits_npz, run_config):
    modules = codebase.baseline()
    del modules["strategy.py"]
    run = simulate(modules, digits_npz, run_config, FAST)
    assert run.diagnosis.level == 1 and "strategy.py" in run.diagnosis.report()


ESCAPES = {
    "socket": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)\n",
    "write outside": "open('/tmp/evoflow-escape-probe', 'w').write('x')\n",
    "fork bomb": "import os\nwhile True:\n    os.fork()\n",
    "memory": "block = bytearray(8 * 2**30)\n",
    "sleep past limit": "import time\ntime.sleep(600)\n",
}


@pytest.mark.parametrize("escape", ESCAPES)
def test_escape_attempts_are_stopped_and_diagnosed(
    escape, digits_npz, run_config, tmp_path
):
    modules = codebase.baseline()
    modules["run.py"] = ESCAPES[escape] + modules["run.py"]
    limits = Limits(seconds=5, memory_mb=2048, output_kb=1024)
    run = simulate(modules, digits_npz, run_config, limits)
    assert run.diagnosis.level == 1, run.diagnosis.report()
    assert run.outcome.status != "passed"
    import os

    assert not os.path.exists("/tmp/evoflow-escape-probe")


def test_level_two_is_not_judged_when_level_one_fails():
    outcome = Outcome("crashed", 0, 0, 1.0, 1, "", "", True)
    verdict = diagnose(
        outcome, "INFO: received 0 results and 0 failures", b'{"rounds": []}', 5
    )
    assert verdict.level == 1 and not any(
        "participation" in p for p in verdict.problems
    )


def test_flower_log_lines_are_read_through_colour_codes():
    outcome = Outcome("passed", 0, 0, 1.0, 0, "", "", True)
    metrics = (
        b'{"rounds": [{"round": 0, "accuracy": 0.1}, {"round": 1, "accuracy": 0.5}]}'
    )
    log = "\x1b[92mINFO \x1b[0m: aggregate_train: Received 3 results and 2 failures"
    verdict = diagnose(outcome, log, metrics, 1)
    assert verdict.level == 1 and "2 failures" in verdict.report()


def test_a_task_scored_on_the_clients_models_is_judged_on_them():
    # FedPer: the global model (averaged heads) stays near chance, personal models learn
    outcome = Outcome("passed", 0, 0, 1.0, 0, "", "", True)
    rounds = [
        {"round": r, "accuracy": 0.15, "client_accuracy": 0.1 + 0.2 * r}
        for r in range(4)
    ]
    metrics = json.dumps({"rounds": rounds}).encode()
    log = "participation: 12 training replies in 3 rounds"
    assert diagnose(outcome, log, metrics, 3).level == 2  # stagnant global accuracy
    assert diagnose(outcome, log, metrics, 3, watch="client_accuracy").ok


def test_a_healthy_log_that_mentions_errors_is_not_a_failure():
    outcome = Outcome("passed", 0, 0, 1.0, 0, "", "", True)
    metrics = (
        b'{"rounds": [{"round": 0, "accuracy": 0.1}, {"round": 1, "accuracy": 0.6}]}'
    )
    log = ("INFO :  ServerApp summary: no error\nINFO :  received 3 results and 0 failures\n"
           "participation: 3 training replies in 1 rounds")  # fmt: skip
    assert diagnose(outcome, log, metrics, 1).ok
    flagged = diagnose(
        outcome, log + "\nERROR :   ServerApp thread raised an exception", metrics, 1
    )
    assert flagged.level == 1 and "ServerApp thread raised" in flagged.report()

"""Warm job start: a script handed to the server runs as its own job — its
streams, folder, environment, exit code — in a child of the server; without a
server it runs cold; a job whose process dies takes its child with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evoflow import warmstart
from evoflow.errors import EvoflowError
from evoflow.report.timing import rule_times

ROOT = Path(__file__).resolve().parents[1]
REPORT = """\
import os, sys, tempfile
from evoflow.warmstart import handoff
handoff()
print(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(),
                  "tmp": tempfile.gettempdir(),
                  "marker": os.environ.get("MARKER"), "argv": sys.argv,
                  "child": os.environ.get("EVOFLOW_WARM_CHILD")}))
sys.exit(int(os.environ.get("CODE", "0")))
"""


@pytest.fixture
def server(tmp_path):
    # torch's import fixes the server's temp dir: a job must still get its own
    process, address = warmstart.start(tmp_path, preload=("json", "torch"))
    assert process is not None, "the server did not come up"
    yield process, address
    warmstart.stop(process, address)
    assert not Path(address).parent.exists()


def job(tmp_path, body: str, address: str | None, **env) -> subprocess.Popen:
    script = tmp_path / "job.py"
    script.write_text("import json\n" + body)
    variables = {**os.environ, **env}
    variables.pop(warmstart.SOCKET_VAR, None)
    if address:
        variables[warmstart.SOCKET_VAR] = address
    return subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=variables,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def test_a_handed_off_job_runs_in_a_child_of_the_server_as_itself(tmp_path, server):
    process, address = server
    (tmp_path / "t").mkdir()
    run = job(
        tmp_path, REPORT, address, MARKER="m1", CODE="3", TMPDIR=str(tmp_path / "t")
    )
    out, err = run.communicate(timeout=60)
    seen = json.loads(out)
    assert run.returncode == 3, err
    assert seen["ppid"] == process.pid and seen["pid"] != run.pid
    assert seen["child"] == "1" and seen["marker"] == "m1"
    assert seen["tmp"] == str(tmp_path / "t")
    assert seen["cwd"] == str(tmp_path) and seen["argv"] == [str(tmp_path / "job.py")]


def test_a_job_for_another_interpreter_start_runs_cold(tmp_path, server):
    run = job(tmp_path, REPORT, server[1], PYTHONHASHSEED="123")
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0 and json.loads(out)["pid"] == run.pid
    assert "starting cold" in err


def test_without_a_server_the_job_runs_cold(tmp_path):
    run = job(tmp_path, REPORT, None, MARKER="m2")
    out, err = run.communicate(timeout=60)
    seen = json.loads(out)
    assert run.returncode == 0 and seen["pid"] == run.pid and seen["child"] is None


def test_a_server_that_is_gone_leaves_the_job_cold_and_says_so(tmp_path, server):
    process, address = server
    process.kill()
    process.wait()
    run = job(tmp_path, REPORT, address)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0 and json.loads(out)["pid"] == run.pid
    assert "warm start:" in err and "starting cold" in err


def test_an_exception_fails_the_job_with_its_traceback(tmp_path, server):
    body = "from evoflow.warmstart import handoff\nhandoff()\nraise ValueError('bad row')\n"
    run = job(tmp_path, body, server[1])
    _, err = run.communicate(timeout=60)
    assert run.returncode == 1
    assert "Traceback" in err and "ValueError: bad row" in err


def test_a_job_whose_process_dies_takes_its_child_and_grandchildren(tmp_path, server):
    body = (
        "import os, subprocess, time\nfrom evoflow.warmstart import handoff\nhandoff()\n"
        "sleeper = subprocess.Popen(['sleep', '300'])\n"
        "open('pids', 'w').write(f'{os.getpid()} {sleeper.pid}')\ntime.sleep(300)\n"
    )
    run = job(tmp_path, body, server[1])
    pids = tmp_path / "pids"
    _wait_until(pids.exists, 60)
    child, grandchild = (int(p) for p in pids.read_text().split())
    run.send_signal(signal.SIGKILL)  # as Snakemake cancelling the job
    run.wait()
    _wait_until(lambda: not (_alive(child) or _alive(grandchild)), 10)
    assert not _alive(child) and not _alive(grandchild)


def test_the_server_leaves_when_its_parent_dies(tmp_path):
    code = (
        "import sys, time\nfrom evoflow import warmstart\n"
        f"process, _ = warmstart.start({str(tmp_path)!r}, preload=())\n"
        "print(process.pid, flush=True)\ntime.sleep(300)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    server = int(parent.stdout.readline())
    assert _alive(server)
    parent.kill()
    parent.wait()
    _wait_until(lambda: not _alive(server), 10)
    assert not _alive(server)


def test_timing_takes_a_warm_jobs_peak_memory_from_its_latest_note(tmp_path):
    bench = tmp_path / "bench"
    for rule, rss in (("train_client", 61.0), ("buffer", 40.0)):
        (bench / rule).mkdir(parents=True)
        (bench / rule / "a.tsv").write_text(f"s\tmax_rss\n12.5\t{rss}\n")
    notes = [{"rule": "train_client", "output": "a", "max_rss": 3000.0, "cpu_time": 9},
             {"rule": "train_client", "output": "a", "max_rss": 900.0, "cpu_time": 9}]  # fmt: skip
    (bench / warmstart.LEDGER).write_text("".join(json.dumps(n) + "\n" for n in notes))
    rules = rule_times(bench)
    assert (
        rules["train_client"]["max_rss_mb"] == 900.0
    )  # the rerun's note, not the first
    assert rules["buffer"]["max_rss_mb"] == 40.0
    (bench / warmstart.LEDGER).write_text('{"rule": "x"}\n')
    with pytest.raises(EvoflowError, match=r"warm_jobs.jsonl:1: not a job note"):
        rule_times(bench)


def _wait_until(condition, seconds: float) -> None:
    """Poll ``condition`` until it holds or ``seconds`` pass (the caller asserts)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead: its parent has not reaped it yet
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_begin_sets_the_jobs_address_and_end_clears_it(tmp_path, monkeypatch):
    monkeypatch.delenv(warmstart.SOCKET_VAR, raising=False)
    address = warmstart.begin(ledger=str(tmp_path / "bench" / warmstart.LEDGER))
    try:
        assert address and os.environ[warmstart.SOCKET_VAR] == address
        assert os.environ[warmstart.LEDGER_VAR] == str(
            tmp_path / "bench" / warmstart.LEDGER
        )
        assert warmstart.begin() is None  # one server a run
    finally:
        warmstart.end()
    assert warmstart.SOCKET_VAR not in os.environ and not Path(address).exists()


def test_no_server_when_switched_off_or_without_a_private_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(warmstart.SWITCH_VAR, "0")
    assert warmstart.begin() is None
    monkeypatch.delenv(warmstart.SWITCH_VAR)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    assert warmstart.begin() is None and warmstart.SOCKET_VAR not in os.environ


def test_ctrl_c_reaches_the_job_and_its_cleanup_runs(tmp_path, server):
    body = (
        "import time\nfrom evoflow.warmstart import handoff\nhandoff()\n"
        "open('started', 'w').close()\n"
        "try:\n    time.sleep(300)\nfinally:\n    open('cleaned', 'w').close()\n"
    )
    run = job(tmp_path, body, server[1])
    _wait_until((tmp_path / "started").exists, 60)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode != 0 and "KeyboardInterrupt" in err
    assert (tmp_path / "cleaned").exists()

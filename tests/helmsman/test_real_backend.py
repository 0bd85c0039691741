"""The agents' loop through the real openai backend against `evoflow
serve-policy` serving the embedded SmolLM2-135M. A 135M model writes no
working Flower code; what this checks is the real path: every agent call goes
over HTTP with a timeout, is logged with the server's token counts, and the
loop ends within its budget whatever the model says."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from evoflow.helmsman.approval import AutoApprover
from evoflow.helmsman.bench import get_task
from evoflow.helmsman.coding import write_codebase
from evoflow.helmsman.llm import AgentLLM, read_calls
from evoflow.helmsman.plan import plan_task
from evoflow.helmsman.refine import attempts, refine
from evoflow.policy.openai import OpenAIPolicy
from evoflow.sandbox import Limits

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def served_model():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "evoflow.cli", "serve-policy", "--model", MODEL,
         "--port", str(port), "--max-context", "8192"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},  # beside the test workers' threads
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while True:
        try:
            httpx.post(f"{url}/v1/chat/completions", timeout=5, json={})
            break
        except httpx.TransportError:
            if server.poll() is not None or time.time() > deadline:
                server.kill()
                output = server.stdout.read().decode(errors="replace")[-2000:]
                pytest.fail(f"evoflow serve-policy did not start:\n{output}")
            time.sleep(1)
    yield url
    server.terminate()
    server.wait(timeout=30)


def test_the_loop_runs_through_a_served_model(
    served_model, tmp_path, digits_npz, run_config
):
    policy = OpenAIPolicy(MODEL, base_url=served_model, max_context=8192, timeout=120)
    llm = AgentLLM(policy, tmp_path / "calls.jsonl", max_new_tokens=32)
    planned = plan_task(get_task("Q1").query, llm, AutoApprover(), max_rounds=1)
    # a 135M planner rarely writes all four sections; the coders then get the query
    modules, _, notes = write_codebase(planned.plan or get_task("Q1").query, llm)
    status = refine(tmp_path / "Q1", modules, digits_npz, {**run_config, "rounds": 2}, llm,
                    budget=1, limits=Limits(seconds=30, memory_mb=4096, output_kb=1024))  # fmt: skip
    calls = read_calls(tmp_path / "calls.jsonl")
    agents = {c["agent"] for c in calls}
    assert {"planner", "supervisor", "coder:task.py", "coder:run.py"} <= agents
    assert all(c["model"] == MODEL and c["prompt_tokens"] > 100 for c in calls)
    assert sum(c["completion_tokens"] for c in calls) > 0
    assert status["status"] in ("SUCCESS", "FAIL_BUDGET") and status["repairs"] <= 1
    assert len(attempts(tmp_path / "Q1")) == status["repairs"] + 1

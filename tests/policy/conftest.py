"""Model fixtures: the tiny random model, and servers run in a thread."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn

from evoflow.policy.hf import HFPolicy


@pytest.fixture(scope="session")
def tiny() -> HFPolicy:
    # fp32 on every CPU: these tests compare decoding paths (batched vs alone,
    # merged vs unmerged adapters) for equality, which bf16 rounding would blur
    # on the tiny model's near-uniform logits. bf16 has its own tests.
    return HFPolicy("tiny-random-llama", max_context=1024, dtype="float32")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def run_app():
    """Serve an ASGI app on a free port in a background thread; yield its URL."""
    servers = []

    def start(app) -> str:
        port = _free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=5)

"""Environment servers run as real subprocesses for tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``evoflow serve-env`` in a subprocess, restartable on the same port."""

    def __init__(self, env: str, *extra: str) -> None:
        self.env, self.extra = env, extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evoflow.cli", "serve-env", self.env,
             "--port", str(self.port), *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError(
            f"server for {self.env} did not start: {self.proc.stderr.read()}"
        )

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

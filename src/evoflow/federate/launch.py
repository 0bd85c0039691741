"""``evoflow federate``: a Flower deployment of one federated method on this
machine — a SuperLink, one SuperNode per client (each its own process group
and store folder) and ``flwr run`` of the evoflow Flower app — or, with
``superlink``, the run alone against a SuperLink (and SuperNodes) started
elsewhere. Every process gets a timeout and is stopped on the way out."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from evoflow.config import load_config
from evoflow.errors import EvoflowError
from evoflow.federate.server import SUMMARY
from evoflow.methods import methods_from_config

APP = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "evoflow-federation"
version = "1.0.0"
description = "evoflow: one federated method as a Flower app"
license = "Apache-2.0"
dependencies = []

[tool.flwr.app]
publisher = "evoflow"

[tool.flwr.app.components]
serverapp = "evoflow.federate.server:app"
clientapp = "evoflow.federate.client:app"

[tool.flwr.app.config]
{run_config}
"""


@dataclass
class Federation:
    """The local processes of a deployment (empty when connecting elsewhere)."""

    folder: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], env: dict, cwd: Path) -> None:
        log = open(self.folder / "logs" / f"{name}.log", "w")
        self.processes[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip

    def stop(self, name: str | None = None) -> None:
        """Stop one process group (a SuperNode with its app processes), or all."""
        for key in [name] if name else list(self.processes):
            proc = self.processes.pop(key, None)
            if proc is None or proc.poll() is not None:
                continue
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def flower_env(home: Path) -> dict:
    """The environment of every Flower process: its own FLWR_HOME, and this
    interpreter's scripts first on PATH (the SuperLink starts ``flower-superexec``)."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "FLWR_HOME": str(home),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }


def write_app(folder: Path, run_config: dict) -> Path:
    """The Flower app folder ``flwr run`` builds and ships (config only: the
    components are imported from the installed evoflow on every machine)."""
    app = folder / "app"
    app.mkdir(parents=True, exist_ok=True)
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in run_config.items())
    (app / "pyproject.toml").write_text(APP.format(run_config=lines))
    return app


def write_connection(home: Path, address: str, insecure: bool = True,
                     root_certificates: str | None = None) -> None:  # fmt: skip
    """The SuperLink connection ``flwr run`` uses (FLWR_HOME/config.toml)."""
    home.mkdir(parents=True, exist_ok=True)
    tls = f'root-certificates = "{root_certificates}"\n' if root_certificates else ""
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "evoflow"\n\n[superlink.evoflow]\naddress = "{address}"\n'
        f"insecure = {'true' if insecure else 'false'}\n{tls}"
    )


def wait_for_port(port: int, timeout: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise EvoflowError(
                f"federate: the SuperLink exited (code {process.returncode}); see its log"
            )
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise EvoflowError(
        f"federate: the SuperLink did not listen on port {port} within {timeout:.0f} s"
    )


def start_local(fed: Federation, clients: list[str], workdir: Path, env: dict,
                node_config: dict[str, str] | None = None) -> str:  # fmt: skip
    """A SuperLink and one SuperNode per client on localhost; returns the
    SuperLink's address. Client ``c`` keeps its store under ``workdir/clients/c``
    and gets ``node_config[c]`` (``key=value ...``) beside its name and folder."""
    port = free_port()
    fed.start("superlink", ["flower-superlink", "--insecure", "--port", str(port),
                            "--disable-runtime-dependency-installation"], env, fed.folder)  # fmt: skip
    wait_for_port(port, 60, fed.processes["superlink"])
    for client in clients:
        root = workdir / "clients" / client
        root.mkdir(parents=True, exist_ok=True)
        fed.start(f"supernode-{client}", [
            "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{port}",
            "--port", str(free_port()), "--node-config",
            f'client="{client}" root="{root}" {(node_config or {}).get(client, "")}'.strip(),
        ], env, root)  # fmt: skip
    return f"127.0.0.1:{port}"


def federate(config_path: str | Path, method: str, workdir: str | Path = ".",
             superlink: str | None = None, allow_partial: bool = False,
             round_timeout: float = 3600.0, timeout: float | None = None,
             node_config: dict[str, str] | None = None, root_certificates: str | None = None,
             join_timeout: float = 120.0, monitor=None) -> dict:  # fmt: skip
    """Run ``method`` of the config as a Flower federation; returns the
    server's summary (status, time per round). With ``superlink`` (run this on
    the SuperLink's host: its ServerApp writes ``workdir/results`` there) no
    process is started here; ``root_certificates`` then verifies its TLS.
    ``node_config`` adds ``key=value`` pairs to a local client's SuperNode;
    ``join_timeout`` bounds the wait for every client's SuperNode to connect.
    ``monitor(federation)`` is called about once a second while the run goes
    on (tests stop clients with it)."""
    config = load_config(config_path)
    workdir = Path(workdir).resolve()
    if method not in config["methods"]:
        raise EvoflowError(f"federate: no method {method!r} in {config_path}")
    kind = methods_from_config(config)[method].kind
    if not kind.federated:
        raise EvoflowError(f"federate: method {method!r} is of kind {kind.name!r}, which "
                           "is not federated (no rounds of client adapters to average)")  # fmt: skip
    folder = workdir / "federation" / config["experiment"] / method
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    results = workdir / "results" / config["experiment"]
    summary = results / method / SUMMARY
    summary.unlink(missing_ok=True)
    env, fed = flower_env(folder / "flwr-home"), Federation(folder)
    try:
        address = superlink or start_local(
            fed, list(config["envs"]), workdir, env, node_config
        )
        write_connection(folder / "flwr-home", address, insecure=root_certificates is None,
                         root_certificates=root_certificates)  # fmt: skip
        app = write_app(folder, {"config": json.dumps(config), "method": method,
                                 "results": str(results), "allow-partial": allow_partial,
                                 "round-timeout": float(round_timeout),
                                 "join-timeout": float(join_timeout)})  # fmt: skip
        fed.start("run", ["flwr", "run", str(app), "evoflow", "--stream"], env, folder)
        return wait_for_summary(fed, summary, timeout, monitor)
    finally:
        fed.stop()


def wait_for_summary(
    fed: Federation, summary: Path, timeout: float | None, monitor
) -> dict:
    """Poll the server's summary until the run is done or failed."""
    deadline = time.monotonic() + (timeout or float("inf"))
    while time.monotonic() < deadline:
        if summary.is_file():
            found = json.loads(summary.read_text())
            if found["status"] == "done":
                return found
            if found["status"] == "failed":
                raise EvoflowError(
                    f"federate: {found['error']} (logs: {fed.folder / 'logs'})"
                )
        run = fed.processes["run"]
        if run.poll() is not None and not summary.is_file():
            raise EvoflowError(f"federate: `flwr run` exited (code {run.returncode}) before the "
                               f"server wrote {summary}; see {fed.folder / 'logs'}")  # fmt: skip
        if monitor is not None:
            monitor(fed)
        time.sleep(1.0)
    raise EvoflowError(
        f"federate: no result within {timeout:.0f} s; see {fed.folder / 'logs'}"
    )

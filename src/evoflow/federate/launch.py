"""``evoflow federate``: a Flower deployment of one federated method on this
machine — a SuperLink, one SuperNode per client (each its own process group
and store folder) and ``flwr run`` of the evoflow Flower app — or, with
``superlink``, the run alone against a SuperLink (and SuperNodes) started
elsewhere. Every process gets a timeout and is stopped on the way out."""

from __future__ import annotations

import copy
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import tomli_w

from evoflow.atomic import write_text
from evoflow.config import config_hash, load_config
from evoflow.errors import EvoflowError
from evoflow.federate.server import SUMMARY
from evoflow.methods import methods_from_config

APP = {  # the Flower app ``flwr run`` builds: configuration only
    "build-system": {"requires": ["hatchling"], "build-backend": "hatchling.build"},
    "project": {"name": "evoflow-federation", "version": "1.0.0", "license": "Apache-2.0",
                "description": "evoflow: one federated method as a Flower app",
                "dependencies": []},
    "tool": {"flwr": {"app": {"publisher": "evoflow", "components": {
        "serverapp": "evoflow.federate.server:app",
        "clientapp": "evoflow.federate.client:app"}}}},
}  # fmt: skip


@dataclass
class Federation:
    """The local processes of a deployment (empty when connecting elsewhere)."""

    folder: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: dict[str, IO] = field(default_factory=dict)
    commands: dict[str, tuple[list[str], dict, Path]] = field(default_factory=dict)

    def start(
        self, name: str, argv: list[str], env: dict, cwd: Path, mode: str = "w"
    ) -> None:
        self.commands[name] = (argv, env, cwd)
        self.logs[name] = open(self.folder / "logs" / f"{name}.log", mode)
        self.processes[name] = subprocess.Popen(
            argv, stdout=self.logs[name], stderr=subprocess.STDOUT, env=env, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip

    def stop(self, name: str | None = None) -> None:
        """Stop one process group (a SuperNode with its app processes), or all:
        SIGTERM, then SIGKILL after 10 s; members left behind by a group
        leader that already exited are signalled too."""
        for key in [name] if name else list(self.processes):
            proc = self.processes.pop(key, None)
            if proc is not None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            log = self.logs.pop(key, None)
            if log is not None:
                log.close()

    def restart(self, name: str) -> None:
        """Stop one process and start it again as it was first started (its
        log goes on)."""
        self.stop(name)
        self.start(name, *self.commands[name], mode="a")


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:  # the whole group is gone already
        pass


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
    pyproject = copy.deepcopy(APP)
    pyproject["tool"]["flwr"]["app"]["config"] = run_config
    write_text(app / "pyproject.toml", tomli_w.dumps(pyproject))
    return app


def write_connection(
    home: Path, address: str, root_certificates: str | None = None
) -> None:
    """The SuperLink connection ``flwr run`` uses (FLWR_HOME/config.toml):
    TLS verified with ``root_certificates``, else plain HTTP."""
    home.mkdir(parents=True, exist_ok=True)
    connection: dict = {"address": address, "insecure": root_certificates is None}
    if root_certificates:
        connection["root-certificates"] = str(Path(root_certificates).resolve())
    write_text(home / "config.toml",
               tomli_w.dumps({"superlink": {"default": "evoflow", "evoflow": connection}}))  # fmt: skip


def check_transport(
    superlink: str, root_certificates: str | None, insecure: bool
) -> None:
    """Refuse plaintext to a SuperLink off this machine: a non-loopback
    ``superlink`` needs ``root_certificates`` (TLS) or an explicit ``insecure``."""
    host = superlink.rsplit(":", 1)[0].strip("[]")
    if root_certificates or insecure or host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise EvoflowError(
        f"federate: --superlink {superlink} is not on this machine and no "
        "--root-certificates were given; the adapters would cross the network in "
        "plaintext (give the SuperLink's CA certificate, or --insecure to allow it)"
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
                node_config: dict[str, str] | None = None, pin: str = "") -> str:  # fmt: skip
    """A SuperLink and one SuperNode per client on localhost; returns the
    SuperLink's address. Client ``c`` keeps its store under ``workdir/clients/c``
    and gets ``node_config[c]`` (``key=value ...``) beside its name, its folder
    and ``pin``, the sha256 of the only config it accepts."""
    port = free_port()
    fed.start("superlink", ["flower-superlink", "--insecure", "--host", "127.0.0.1",
                            "--port", str(port),
                            "--disable-runtime-dependency-installation"], env, fed.folder)  # fmt: skip
    wait_for_port(port, 60, fed.processes["superlink"])
    for client in clients:
        root = workdir / "clients" / client
        root.mkdir(parents=True, exist_ok=True)
        fed.start(f"supernode-{client}", [
            "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{port}",
            "--host", "127.0.0.1", "--port", str(free_port()), "--node-config",
            f'client="{client}" root="{root}" config_sha256="{pin}" '
            f'{(node_config or {}).get(client, "")}'.strip(),
        ], env, root)  # fmt: skip
    return f"127.0.0.1:{port}"


def federate(config_path: str | Path, method: str, workdir: str | Path = ".",
             superlink: str | None = None, allow_partial: bool = False,
             round_timeout: float = 3600.0, timeout: float | None = None,
             node_config: dict[str, str] | None = None, root_certificates: str | None = None,
             join_timeout: float = 120.0, monitor=None, insecure: bool = False) -> dict:  # fmt: skip
    """Run ``method`` of the config as a Flower federation; returns the
    server's summary (status, time per round). With ``superlink`` (run this on
    the SuperLink's host: its ServerApp writes ``workdir/results`` there) no
    process is started here; ``root_certificates`` then verifies its TLS
    (plaintext to a SuperLink off this machine needs ``insecure``).
    ``node_config`` adds ``key=value`` pairs to a local client's SuperNode;
    ``join_timeout`` bounds the wait for every client's SuperNode to connect.
    ``monitor(federation)`` is called about once a second while the run goes
    on (tests stop clients with it)."""
    for name, value in (("round_timeout", round_timeout), ("join_timeout", join_timeout),
                        ("timeout", timeout if timeout is not None else 1.0)):  # fmt: skip
        if not 0 < value < float("inf"):
            raise EvoflowError(
                f"federate: {name} must be a positive number of seconds, got {value}"
            )
    if superlink:
        check_transport(superlink, root_certificates, insecure)
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
            fed, list(config["envs"]), workdir, env, node_config, config_hash(config)
        )
        write_connection(folder / "flwr-home", address, root_certificates)
        app = write_app(folder, {"config": json.dumps(config), "method": method,
                                 "results": str(results), "allow-partial": allow_partial,
                                 "round-timeout": float(round_timeout),
                                 "join-timeout": float(join_timeout)})  # fmt: skip
        fed.start("run", ["flwr", "run", str(app), "evoflow", "--stream"], env, folder)
        return wait_for_summary(fed, summary, timeout, monitor)
    finally:
        fed.stop()


def wait_for_summary(fed: Federation, summary: Path, timeout: float | None, monitor,
                     grace: float = 30.0) -> dict:  # fmt: skip
    """Poll the server's summary until the run is done or failed; a `flwr run`
    that has exited while the summary still says running (a ServerApp killed
    from outside) fails the run after ``grace`` seconds."""
    deadline = time.monotonic() + (timeout or float("inf"))
    ended = None
    while time.monotonic() < deadline:
        found = json.loads(summary.read_text()) if summary.is_file() else {}
        if found.get("status") == "done":
            return found
        if found.get("status") == "failed":
            raise EvoflowError(
                f"federate: {found['error']} (logs: {fed.folder / 'logs'})"
            )
        if fed.processes["run"].poll() is not None:
            ended = ended or time.monotonic()
            if time.monotonic() - ended > grace:
                raise EvoflowError(
                    f"federate: `flwr run` exited (code {fed.processes['run'].returncode}) "
                    f"and the server never finished {summary}; see {fed.folder / 'logs'}")  # fmt: skip
        if monitor is not None:
            monitor(fed)
        time.sleep(1.0)
    raise EvoflowError(
        f"federate: no result within {timeout:.0f} s; see {fed.folder / 'logs'}"
    )

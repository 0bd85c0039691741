"""The multi-host set-up the README documents, on one host: a SuperLink
serving TLS with a certificate of our own CA, SuperNodes that verify it
(`--root-certificates`) and `evoflow federate --superlink ... --root-certificates`
against them; and a SuperNode that does not trust that CA never joins."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evoflow.config import config_hash, load_config
from evoflow.errors import EvoflowError
from evoflow.federate.launch import (
    Federation,
    federate,
    flower_env,
    free_port,
    wait_for_port,
)
from tests.workflow.conftest import ROOT

pytestmark = pytest.mark.slow
CONFIG = ROOT / "tests" / "configs" / "tiny_federate.yaml"
PIN = config_hash(load_config(CONFIG))  # what each SuperNode is pinned to


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60
    )


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Path:
    """A CA, and a server certificate it signed for 127.0.0.1 (Debian's openssl)."""
    folder = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", "1", "-subj", "/CN=evoflow test CA", cwd=folder)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
             "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=folder)  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "1", "-extfile", "san.ext",
             cwd=folder)  # fmt: skip
    return folder


def _deployment(tmp_path: Path, tls: Path, trusted: Path) -> tuple[Federation, str]:
    """A TLS SuperLink and a SuperNode per client that trusts ``trusted``."""
    (tmp_path / "logs").mkdir(parents=True)
    fed, env, port = Federation(tmp_path), flower_env(tmp_path / "home"), free_port()
    fed.start("superlink", ["flower-superlink", "--port", str(port),
                            "--ssl-ca-certfile", str(tls / "ca.crt"),
                            "--ssl-certfile", str(tls / "server.pem"),
                            "--ssl-keyfile", str(tls / "server.key"),
                            "--disable-runtime-dependency-installation"], env, tmp_path)  # fmt: skip
    wait_for_port(port, 60, fed.processes["superlink"])
    for client in ("maze", "wordle"):
        root = tmp_path / "clients" / client
        root.mkdir(parents=True)
        fed.start(f"supernode-{client}", [
            "flower-supernode", "--superlink", f"127.0.0.1:{port}",
            "--root-certificates", str(trusted), "--port", str(free_port()),
            "--node-config", f'client="{client}" root="{root}" config_sha256="{PIN}"'],
            env, root)  # fmt: skip
    return fed, f"127.0.0.1:{port}"


def test_a_federation_over_tls(tmp_path, certificates):
    fed, address = _deployment(tmp_path, certificates, certificates / "ca.crt")
    try:
        summary = federate(CONFIG, "fedse", tmp_path, superlink=address, timeout=400,
                           root_certificates=str(certificates / "ca.crt"))  # fmt: skip
    finally:
        fed.stop()
    assert [r["participants"] for r in summary["rounds"]] == [["maze", "wordle"]] * 2
    assert (tmp_path / "clients/maze/results/tiny-federate/fedse/round=2").is_dir()


def test_a_supernode_that_does_not_trust_the_ca_never_joins(tmp_path, certificates):
    stranger = tmp_path / "other"
    stranger.mkdir()
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "o.key", "-out",
             "o.crt", "-days", "1", "-subj", "/CN=another CA", cwd=stranger)  # fmt: skip
    fed, address = _deployment(tmp_path / "run", certificates, stranger / "o.crt")
    run = tmp_path / "run"
    try:
        with pytest.raises(EvoflowError, match="0 of 2 SuperNodes connected"):
            federate(CONFIG, "fedse", run, superlink=address, timeout=120,
                     root_certificates=str(certificates / "ca.crt"), join_timeout=10)  # fmt: skip
    finally:
        fed.stop()
    assert "CERTIFICATE_VERIFY_FAILED" in (run / "logs/supernode-maze.log").read_text()

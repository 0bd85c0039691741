"""Plaintext to a SuperLink off this machine is refused before anything
starts; loopback, TLS or an explicit --insecure go ahead."""

from __future__ import annotations

from pathlib import Path

import pytest

from evoflow.errors import EvoflowError
from evoflow.federate.launch import check_transport, federate

CONFIG = Path(__file__).parents[1] / "configs" / "tiny_federate.yaml"


@pytest.mark.parametrize(
    "address", ["10.0.0.5:9093", "lab.example:9093", "[2001:db8::1]:9093"]
)
def test_plaintext_to_another_machine_is_refused(address, tmp_path):
    with pytest.raises(EvoflowError, match="--root-certificates"):
        check_transport(address, None, insecure=False)
    with pytest.raises(EvoflowError, match="plaintext"):  # before any process starts
        federate(CONFIG, "fedse", tmp_path, superlink=address)
    assert not (tmp_path / "federation").exists()


@pytest.mark.parametrize("address", ["127.0.0.1:9093", "localhost:9093", "[::1]:9093"])
def test_loopback_tls_or_insecure_go_ahead(address):
    check_transport(address, None, insecure=False)
    check_transport("10.0.0.5:9093", "ca.crt", insecure=False)
    check_transport("10.0.0.5:9093", None, insecure=True)

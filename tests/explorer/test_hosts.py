"""The explorer answers only Host names it serves (no DNS rebinding), and its
errors do not reveal where the store lives."""

from __future__ import annotations

from fastapi.testclient import TestClient

from evoflow.explorer.app import allowed_hosts, create_app


def test_a_foreign_host_is_refused_and_loopback_is_served(tmp_path):
    client = TestClient(create_app(tmp_path), base_url="http://127.0.0.1:8765")

    assert client.get("/").status_code == 200
    assert client.get("/", headers={"Host": "localhost:8765"}).status_code == 200
    rebound = client.get("/", headers={"Host": "attacker.example:8765"})
    assert rebound.status_code == 400 and str(tmp_path) not in rebound.text
    missing = client.get("/episode", params={"id": "nope"})
    assert missing.status_code == 404 and str(tmp_path) not in missing.text


def test_the_bound_address_and_named_extras_are_the_allowed_hosts(tmp_path):
    assert allowed_hosts("127.0.0.1") == ("127.0.0.1", "localhost", "::1")
    assert allowed_hosts("0.0.0.0", ("lab.example",)) == ("0.0.0.0", "lab.example")
    app = create_app(tmp_path, allowed_hosts("10.0.0.5", ("lab.example",)))
    client = TestClient(app, base_url="http://10.0.0.5")
    assert client.get("/").status_code == 200
    assert client.get("/", headers={"Host": "lab.example"}).status_code == 200
    assert client.get("/", headers={"Host": "localhost"}).status_code == 400

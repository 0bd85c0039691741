"""Thousands of random requests: never a 5xx, bounded memory, still serving."""

from __future__ import annotations

import httpx
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PATHS = [
    "/v1/sessions", "/v1/sessions/{id}/reset", "/v1/sessions/{id}/step",
    "/v1/sessions/{id}/observation", "/v1/sessions/{id}/available_actions",
    "/v1/sessions/{id}", "/v1/step", "/v1/info", "/v1/tasks", "/health",
    "/maze/create", "/maze/reset", "/maze/step", "/maze/available_actions",
    "/{junk}", "/v1/sessions/{junk}/step",
]  # fmt: skip
KEYS = ["id", "task_id", "action", "steps", "game", "split", "seed", "data_idx"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40)
    | st.sampled_from(["move up", "0", "3", "move down"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
requests = st.fixed_dictionaries(
    {
        "method": st.sampled_from(["GET", "POST", "DELETE", "PUT"]),
        "path": st.sampled_from(PATHS),
        "id": st.integers(-5, 40) | st.just(2**64) | st.text(max_size=6),
        "junk": st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FFF), max_size=12),
        "body": st.one_of(st.none(), json_values, st.binary(max_size=300)),
        "query": st.dictionaries(st.sampled_from(KEYS), st.text(max_size=10), max_size=2),
    }
)  # fmt: skip


@pytest.mark.slow
def test_random_requests_never_crash_the_server(serve):
    server = serve("maze", "--max-sessions", "32")
    process = psutil.Process(server.proc.pid)
    http = httpx.Client(base_url=server.url, timeout=10)
    statuses: list[int] = []

    @settings(max_examples=2500, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(requests)
    def fire(req):
        path = req["path"].format(id=req["id"], junk=req["junk"])
        kwargs = {"params": req["query"]}
        if isinstance(req["body"], bytes):
            kwargs["content"] = req["body"]
        elif req["body"] is not None:
            kwargs["json"] = req["body"]
        try:
            response = http.request(req["method"], path, **kwargs)
        except httpx.InvalidURL:
            return
        statuses.append(response.status_code)
        assert response.status_code < 500, (req, response.text)
        if response.status_code >= 400 and response.headers.get(
            "content-type", ""
        ).startswith("application/json"):
            assert "error" in response.json() or "detail" in response.json()

    fire()
    # Prepare a baseline after warm-up, then fire again: memory must not keep growing.
    baseline = process.memory_info().rss
    fire()
    grown = process.memory_info().rss - baseline

    assert len(statuses) >= 4000  # thousands of requests reached the server
    assert grown < 30 * 2**20, f"server grew by {grown / 2**20:.1f} MiB"
    assert http.get("/health").json()["sessions"] <= 32
    sid = http.post("/v1/sessions")
    if sid.status_code == 429:  # full of fuzz sessions: closing one must free a slot
        live = next(
            i
            for i in range(100_000)
            if http.delete(f"/v1/sessions/{i}").status_code == 204
        )
        assert live >= 0
        sid = http.post("/v1/sessions")
    assert sid.status_code == 201
    reset = http.post(f"/v1/sessions/{sid.json()['id']}/reset", json={"task_id": "0"})
    assert reset.json()["observation"].startswith("The goal is at position")

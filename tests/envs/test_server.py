from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from evoflow.envs import make_env, play_expert
from evoflow.envs.server import create_app
from evoflow.envs.sessions import SessionPool, TooManySessions, UnknownSession


@pytest.fixture
def maze():
    with TestClient(create_app("maze", max_sessions=4)) as client:
        yield client


def test_v1_protocol_round_trip(maze):
    # Prepare
    expert = play_expert(make_env("maze"), "3")

    # Execute
    info = maze.get("/v1/info").json()
    created = maze.post("/v1/sessions")
    sid = created.json()["id"]
    first = maze.post(f"/v1/sessions/{sid}/reset", json={"task_id": "3"}).json()
    steps = [
        maze.post(f"/v1/sessions/{sid}/step", json={"action": a}).json()
        for a in expert.actions
    ]

    # Assert
    assert created.status_code == 201
    assert (
        info["env"] == "maze"
        and info["max_turns"] == 15
        and info["splits"] == {"train": 885, "validation": 200, "test": 25}
    )
    assert first["observation"] == expert.first_observation
    assert [s["observation"] for s in steps] == [
        t.result.observation for t in expert.turns
    ]
    assert steps[-1] == {"observation": steps[-1]["observation"], "reward": 1.0,
                         "done": True, "success": True, "valid": True}  # fmt: skip
    assert (
        maze.get(f"/v1/sessions/{sid}/observation").json()["observation"]
        == steps[-1]["observation"]
    )
    assert (
        maze.get(f"/v1/sessions/{sid}/available_actions").json()["actions"][0]
        == "move up"
    )
    assert maze.get("/v1/tasks", params={"split": "test"}).json()["task_ids"][:2] == [
        "0",
        "1",
    ]
    validation = maze.get("/v1/tasks", params={"split": "validation"}).json()
    assert validation["task_ids"] == make_env("maze").task_ids("validation")
    assert maze.delete(f"/v1/sessions/{sid}").status_code == 204
    assert maze.get(f"/v1/sessions/{sid}/observation").status_code == 404


def test_batched_steps(maze):
    ids = [maze.post("/v1/sessions").json()["id"] for _ in range(2)]
    for sid, task in zip(ids, ["0", "18"], strict=True):
        maze.post(f"/v1/sessions/{sid}/reset", json={"task_id": task})
    body = {
        "steps": [
            {"id": ids[0], "action": "move right"},
            {"id": ids[1], "action": "move down"},
        ]
    }
    results = maze.post("/v1/step", json=body).json()["results"]
    assert results[0]["observation"].endswith(
        "position 1, 2. There are walls above you, below you."
    )
    assert results[1]["success"] is True
    again = maze.post(
        "/v1/step", json={"steps": [{"id": ids[1], "action": "move up"}]}
    ).json()
    assert "no running episode" in again["results"][0]["error"]
    assert (
        maze.post("/v1/step", json={"steps": [{"id": 999, "action": "x"}]}).status_code
        == 404
    )


@pytest.mark.parametrize(
    "method, path, body, status, kind",
    [
        ("post", "/v1/sessions/77/step", {"action": "move up"}, 404, "unknown_session"),
        ("post", "/v1/sessions/0/reset", {"task_id": "999999"}, 404, "unknown_task"),
        ("post", "/v1/sessions/0/step", {"action": "move up"}, 409, "episode_state"),
        ("post", "/v1/sessions/0/step", {"act": "move up"}, 422, "malformed_request"),
        (
            "post",
            "/v1/sessions/0/step",
            {"action": "x" * 5000},
            422,
            "malformed_request",
        ),
        ("post", "/v1/sessions/abc/step", {"action": "x"}, 422, "malformed_request"),
        ("get", "/v1/tasks?split=dev", None, 422, "malformed_request"),
    ],
)
def test_errors_have_status_and_json_body(maze, method, path, body, status, kind):
    maze.post("/v1/sessions")  # session 0, never reset
    response = getattr(maze, method)(
        path, **({"json": body} if body is not None else {})
    )
    assert response.status_code == status
    assert response.json()["kind"] == kind and response.json()["error"]


def test_oversized_and_broken_bodies(maze):
    sid = maze.post("/v1/sessions").json()["id"]
    big = maze.post(f"/v1/sessions/{sid}/step", content=b"{" + b" " * 70_000 + b"}",
                    headers={"content-type": "application/json"})  # fmt: skip
    assert big.status_code == 413 and big.json()["kind"] == "too_large"
    broken = maze.post(f"/v1/sessions/{sid}/step", content=b"{not json",
                       headers={"content-type": "application/json"})  # fmt: skip
    assert broken.status_code == 422


def test_session_limit_and_close_frees_a_slot(maze):
    ids = [maze.post("/v1/sessions").json()["id"] for _ in range(4)]
    refused = maze.post("/v1/sessions")
    assert refused.status_code == 429 and refused.json()["kind"] == "too_many_sessions"
    maze.delete(f"/v1/sessions/{ids[0]}")
    assert maze.post("/v1/sessions").json()["id"] == 4  # ids are never reused


def test_idle_sessions_expire():
    now = [0.0]
    pool = SessionPool(
        lambda: make_env("maze"), max_sessions=2, idle_ttl=10, clock=lambda: now[0]
    )
    a = pool.create()
    now[0] = 5
    b = pool.create()
    with pytest.raises(TooManySessions):
        pool.create()
    now[0] = 12  # a idle for 12 s, b for 7 s
    c = pool.create()
    with pytest.raises(UnknownSession):
        pool.get(a)
    assert {b, c} == {1, 2}

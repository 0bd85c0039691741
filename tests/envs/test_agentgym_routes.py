"""AgentGym's clients see exactly the shapes of AgentGym's own servers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from evoflow.envs import make_env, play_expert
from evoflow.envs.server import create_app


def client(env: str) -> TestClient:
    return TestClient(create_app(env))


def test_maze_routes():
    expert = play_expert(make_env("maze"), "4")
    with client("maze") as http:
        sid = http.post("/maze/create").json()["id"]
        first = http.post("/maze/reset", json={"id": sid, "game": 4}).json()
        steps = [
            http.post("/maze/step", json={"id": sid, "action": a}).json()
            for a in expert.actions
        ]
        assert first == {"observation": expert.first_observation}
        assert steps[-1] == {
            "observation": expert.turns[-1].result.observation,
            "reward": 1.0,
            "done": True,
        }
        assert set(http.get("/maze/available_actions").json()) == {
            "move up", "move down", "move left", "move right"}  # fmt: skip
        late = http.post("/maze/step", json={"id": sid, "action": "move up"})
        assert (
            late.status_code == 200 and "error" in late.json()
        )  # AgentGym's convention


def test_wordle_routes():
    with client("wordle") as http:
        sid = http.post("/wordle/create").json()["id"]
        assert len(http.get("/wordle/filtered_vocab", params={"id": sid}).json()) == 40
        first = http.post("/wordle/reset", json={"id": sid, "seed": 3}).json()
        assert first["observation"].startswith("A new game of Wordle begins.")
        step = http.post("/wordle/step", json={"id": sid, "action": "s h i r e"}).json()
        assert step == {"observation": "Feedback for s h i r e: b b b y b. 5 guesses left.",
                        "reward": 0.0, "done": False}  # fmt: skip
        assert len(http.get("/wordle/filtered_vocab", params={"id": sid}).json()) < 40


def test_unknown_id_answers_200_with_error_like_agentgym():
    with client("maze") as http:
        response = http.post("/maze/step", json={"id": 41, "action": "move up"})
        assert response.status_code == 200
        assert response.json() == {"error": "no session with id 41 (closed or expired)"}


@pytest.mark.parametrize("name", ["babyai", "textcraft"])
def test_babyai_and_textcraft_routes(name):
    env = make_env(name)
    expert = play_expert(env, "0")
    with client(name) as http:
        created = http.post("/create", json={"commands": None, "goal": None}).json()
        sid = created["id"]
        first = http.post("/reset", json={"id": sid, "data_idx": 0}).json()
        assert first["observation"] == expert.first_observation
        last = None
        for action in expert.actions:
            last = http.post("/step", json={"id": sid, "action": action}).json()
        assert last["done"] is True and last["reward"] == expert.turns[-1].result.reward
        if name == "babyai":
            assert set(first) == {"observation", "reward", "score", "deleted", "done"}
            assert last["score"] == pytest.approx(expert.reward)
        else:
            assert set(created) == {"id", "observation", "done", "reward"}
            assert http.get("/goal", params={"id": sid}).json() == env.goal
            assert http.get("/commands", params={"id": sid}).json() == "\n".join(
                env.commands
            )
        assert http.post("/close", json={"id": sid}).json() is True


def test_webshop_routes():
    env = make_env("webshop")
    expert = play_expert(env, "0")
    with client("webshop") as http:
        idx = http.post("/create").json()
        assert isinstance(idx, int)
        first = http.post("/reset", json={"env_idx": idx, "session_id": 0}).json()
        assert first == [expert.first_observation, None]
        actions = http.get("/available_actions", params={"env_idx": idx}).json()
        assert (
            set(actions) == {"has_search_bar", "clickables"}
            and actions["has_search_bar"]
        )
        for action in expert.actions:
            last = http.post("/step", json={"env_idx": idx, "action": action}).json()
        assert set(last) == {"state", "reward", "done", "info"}
        assert last["done"] is True and last["reward"] == 1.0


def test_webshop_close_answers_200_and_ends_the_session():
    with client("webshop") as http:
        idx = http.post("/create").json()
        http.post("/reset", json={"env_idx": idx, "session_id": 0})
        instruction = http.get("/instruction_text", params={"env_idx": idx}).json()
        closed = http.post("/close", json={"env_idx": idx})
        shop = make_env("webshop")
        shop.reset("0")
        assert instruction == shop.page.instruction
        assert closed.status_code == 200 and closed.json() is True
        late = http.post("/step", json={"env_idx": idx, "action": "search[x]"})
        assert late.status_code == 200 and "error" in late.json()


def test_textcraft_create_with_its_own_commands_and_goal():
    commands = (
        "craft 4 oak planks using 1 oak log\ncraft 1 crafting table using 4 oak planks"
    )
    with client("textcraft") as http:
        body = {"commands": commands, "goal": "minecraft:crafting_table"}
        created = http.post("/create", json=body).json()
        sid = created["id"]
        assert created["observation"] == (
            f"Crafting commands:\n{commands}\n\nGoal: craft crafting table."
        )
        assert http.get("/goal", params={"id": sid}).json() == "crafting table"
        for action in [
            "get 1 oak log",
            "craft 4 oak planks using 1 oak log",
            "craft 1 crafting table using 4 oak planks",
        ]:
            last = http.post("/step", json={"id": sid, "action": action}).json()
        assert last == {"observation": "Crafted 1 crafting table", "reward": 1.0,
                        "done": True}  # fmt: skip
        bad = http.post("/create", json={"commands": commands, "goal": "unobtainium"})
        half = http.post("/create", json={"commands": commands, "goal": None})
        assert bad.status_code == 200 and "unobtainium" in bad.json()["error"]
        assert "both" in half.json()["error"]

from __future__ import annotations

import httpx
import pytest

from evoflow.envs import TaskError, make_env, play_expert, replay
from evoflow.envs.remote import RemoteEnv, RemoteError


def test_remote_env_matches_the_local_env(serve):
    server = serve("wordle")
    expert = play_expert(make_env("wordle"), "5")
    with RemoteEnv(server.url) as remote:
        assert remote.name == "wordle" and remote.max_turns == 8
        assert remote.system_prompt == make_env("wordle").system_prompt
        assert remote.task_ids("test") == make_env("wordle").task_ids("test")
        played = replay(remote, "5", expert.actions)
    assert [t.result for t in played.turns] == [t.result for t in expert.turns]


def test_agentgym_protocol_against_our_server(serve):
    server = serve("maze")
    expert = play_expert(make_env("maze"), "7")
    with RemoteEnv(server.url, protocol="agentgym", env="maze") as remote:
        played = replay(remote, "7", expert.actions)
    assert played.success
    assert [t.result.observation for t in played.turns] == [
        t.result.observation for t in expert.turns
    ]


def test_client_survives_a_server_restart_between_episodes(serve):
    server = serve("maze")
    expert = play_expert(make_env("maze"), "2")
    with RemoteEnv(server.url, retries=40, backoff=0.05) as remote:
        assert replay(remote, "2", expert.actions).success
        server.kill()
        server.start()  # same port, new process: our session id is unknown there
        assert replay(remote, "2", expert.actions).success


def test_step_to_a_dead_server_fails_clearly(serve):
    server = serve("maze")
    with RemoteEnv(server.url, retries=2, backoff=0.01) as remote:
        remote.reset("0")
        server.kill()
        with pytest.raises(RemoteError, match="failed after 3 tries"):
            remote.step("move right")


def test_unknown_task_is_a_task_error(serve):
    server = serve("maze")
    with RemoteEnv(server.url) as remote, pytest.raises(TaskError, match="no task"):
        remote.reset("424242")


def test_agentgym_babyai_rewards_become_changes_that_sum_to_its_last():
    # AgentGym's BabyAI server reports the reward of the latest action and keeps
    # it through answers that change nothing; a hidden late success (reward 0.45,
    # not done) is lost again by the next action.
    reported = iter([0.0, 0.45, 0.45, 0.0, 0.9])

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/create":
            return httpx.Response(200, json={"id": 0})
        if request.url.path == "/reset":
            return httpx.Response(
                200, json={"observation": "Your goal: go", "done": False}
            )
        reward = next(reported)
        return httpx.Response(200, json={"observation": "o", "reward": reward,
                                         "done": reward > 0.5})  # fmt: skip

    client = httpx.Client(transport=httpx.MockTransport(server))
    env = RemoteEnv("http://agentgym", protocol="agentgym", env="babyai", client=client)
    env.reset("2")
    steps = [env.step("a") for _ in range(5)]
    assert [s.reward for s in steps] == pytest.approx([0.0, 0.45, 0.0, -0.45, 0.9])
    assert [s.success for s in steps] == [False] * 4 + [True]
    assert sum(s.reward for s in steps) == pytest.approx(0.9)

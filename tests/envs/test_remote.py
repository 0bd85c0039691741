from __future__ import annotations

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

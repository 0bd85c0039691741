"""Rollouts against environment servers, including one that dies mid-rollout."""

from __future__ import annotations

import httpx

from evoflow.envs import make_env
from evoflow.envs.remote import RemoteEnv
from evoflow.rollout.engine import RolloutSpec, rollout
from tests.rollout.scripted import ScriptedPolicy
from tests.servers import ServerProcess

SPEC = RolloutSpec(
    experiment="t", method="m", split="test", source="eval", client="maze", width=4
)


def remote_factory(url: str):
    client = httpx.Client()
    return lambda: RemoteEnv(url, client=client, retries=2, backoff=0.05)


def test_remote_rollout_matches_in_process(serve):
    server = serve("maze")
    tasks = ["0", "3", "7"]
    remote = rollout(
        ScriptedPolicy("maze", tasks),
        remote_factory(server.url),
        tasks,
        SPEC,
        progress=False,
    )
    local = rollout(
        ScriptedPolicy("maze", tasks),
        lambda: make_env("maze"),
        tasks,
        SPEC,
        progress=False,
    )
    assert [e.messages for e in remote] == [e.messages for e in local]
    assert all(e.success for e in remote)


class KillingPolicy(ScriptedPolicy):
    """Plays the expert, but kills the env server before the third turn."""

    def __init__(self, server: ServerProcess, tasks: list[str]) -> None:
        super().__init__("maze", tasks)
        self.server = server

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        if self.calls == 2:
            self.server.kill()
        return super().generate(chats, params, adapter, seeds, keys)


def test_server_killed_mid_rollout_ends_episodes_with_error(serve):
    # Prepare
    server = serve("maze")
    tasks = ["0", "1"]  # both need 12 moves, so they are still running at turn 3

    # Execute
    episodes = rollout(
        KillingPolicy(server, tasks),
        remote_factory(server.url),
        tasks,
        SPEC,
        progress=False,
    )

    # Assert: the rollout completed and recorded what happened
    assert [(e.termination, e.n_turns, e.success) for e in episodes] == [
        ("error", 3, False)
    ] * 2
    assert episodes[0].messages[-1].role == "assistant"

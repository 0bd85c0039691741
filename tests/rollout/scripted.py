"""A policy that replays expert actions: the test double for orchestration tests."""

from __future__ import annotations

from evoflow.envs import make_env, play_expert
from evoflow.policy.base import Generation, Policy
from evoflow.rollout.react import format_reply


class ScriptedPolicy(Policy):
    """Answers each chat with the expert's next action for the chat's task.

    The task is read from the episode id the engine passes as cache key
    (``…/<task>/<sample>``); the turn is the number of assistant messages so far.
    """

    model_id = "scripted-expert"
    max_context = 1_000_000

    def __init__(self, env_name: str, task_ids: list[str], fail_times: int = 0) -> None:
        env = make_env(env_name)
        self.scripts = {}
        for task in task_ids:
            played = play_expert(env, task)
            self.scripts[task] = [(t.thought, t.action) for t in played.turns]
        self.calls = 0
        self.fail_times = fail_times

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        from evoflow.policy.base import PolicyError

        self.calls += 1
        if self.calls <= self.fail_times:
            raise PolicyError("backend hiccup")
        out = []
        for chat, key in zip(chats, keys, strict=True):
            script = self.scripts[key.split("/")[-2]]
            turn = sum(1 for m in chat if m["role"] == "assistant")
            thought, action = (
                script[turn] if turn < len(script) else ("Out of script.", "noop")
            )
            out.append(Generation(format_reply(thought, action), 100, 10))
        return out

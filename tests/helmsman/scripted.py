"""A scripted language model for the Helmsman tests: each agent's reply is
chosen by a function of the prompt (a test double for orchestration tests;
the real backends are exercised in test_real_backend.py)."""

from __future__ import annotations

from collections.abc import Callable

from evoflow.policy.base import Generation, Policy

MARKERS = {
    "planner": "Write a research plan",
    "reflector": "Answer on the first line COMPLETE",
    "supervisor": "Split the work",
    "debugger": "Fix it with targeted changes",
    "judge": "Answer PASS or FAIL",
    "coder": "Write ",
}


def agent_of(prompt: str) -> str:
    """Which agent a prompt is for (the coder's marker is the most generic)."""
    return next(name for name, marker in MARKERS.items() if marker in prompt)


class ScriptedPolicy(Policy):
    """Replies with ``script(agent, prompt)``; counts calls per agent."""

    model_id = "scripted"
    max_context = 1_000_000

    def __init__(self, script: Callable[[str, str], str]) -> None:
        self.script = script
        self.calls: list[tuple[str, str]] = []

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        out = []
        for chat in chats:
            prompt = chat[-1]["content"]
            agent = agent_of(prompt)
            self.calls.append((agent, prompt))
            text = self.script(agent, prompt)
            out.append(Generation(text, len(prompt.split()), len(text.split())))
        return out

    def count(self, agent: str) -> int:
        return sum(1 for name, _ in self.calls if name == agent)

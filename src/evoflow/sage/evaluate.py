"""SAGE's validation: the Solver's pass@1 (greedy, no plan) on held-out problems.

Accuracy is reported per group — ``math-L<level>`` for generated maths,
``humaneval`` for the held-out HumanEval half, a local benchmark's name
(``evoflow.sage.benchmarks``) — and overall (every problem
counts once), as the paper reports pass@1 per benchmark.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from evoflow.policy.base import Policy, SamplingParams
from evoflow.sage import roles
from evoflow.sage.problems import Problem
from evoflow.sage.step import Checker
from evoflow.store.schema import Episode, Message


def group_of(p: Problem) -> str:
    """``humaneval`` or a local benchmark's name; ``math-L<level>`` for ours."""
    return f"{p.kind}-L{p.level}" if p.source == "generated" else p.source


def evaluate_solver(policy: Policy, adapter: str | Path | None, problems: list[Problem],
                    checker: Checker, max_new_tokens: int, labels: dict) -> tuple[dict, list]:  # fmt: skip
    """(metrics, episodes): greedy Solver answers to ``problems``, verified.

    ``labels``: experiment, method, model and round written on each episode.
    """
    chats = [roles.solver_chat(p, None) for p in problems]
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    replies = policy.generate(
        chats, params, adapter=None if adapter is None else str(adapter)
    )
    scores: dict[str, list[float]] = defaultdict(list)
    episodes = []
    for p, chat, reply in zip(problems, chats, replies, strict=True):
        score = checker.correct(p, roles.solver_answer(reply.text, p.kind))
        scores[group_of(p)].append(float(score == 1.0))
        messages = [Message(m["role"], m["content"]) for m in chat]
        messages.append(Message("assistant", reply.text))
        episodes.append(Episode(
            experiment=labels["experiment"], method=labels["method"], env="sage",
            task_id=p.id, split="test", episode_id=f"eval-{p.id}", source="eval",
            model_id=labels["model"], round=labels["round"], horizon=1,
            reward=score, success=score == 1.0, n_turns=1, agent_role="solver",
            n_tokens=reply.prompt_tokens + reply.completion_tokens,
            messages=messages, extras={"group": group_of(p)},
        ))  # fmt: skip
    metrics = {
        "accuracy": {g: sum(v) / len(v) for g, v in sorted(scores.items())},
        "problems": {g: len(v) for g, v in sorted(scores.items())},
        "overall": sum(e.success for e in episodes) / max(len(episodes), 1),
    }
    return metrics, episodes

"""The agents' language model: any evoflow ``Policy`` (the openai backend for
an OpenAI-compatible endpoint, hf for a local model), with every call logged
to a JSON-lines file that doubles as a cache keyed by (agent, prompt) — a
rerun replays its calls for free — and token counts per agent."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from evoflow.policy.base import Policy, SamplingParams

MAX_REPLY_BYTES = 65_536


class AgentLLM:
    """Ask a policy on behalf of a named agent, through a call log."""

    def __init__(self, policy: Policy, calls: Path, max_new_tokens: int = 2048,
                 temperature: float = 0.0) -> None:  # fmt: skip
        self.policy = policy
        self.calls = Path(calls)
        self.params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens,
                                     max_reply_bytes=MAX_REPLY_BYTES)  # fmt: skip
        self._cache = {row["key"]: row for row in read_calls(self.calls)}

    def ask(self, agent: str, chat: list[dict]) -> str:
        """The policy's reply to ``chat``; the same agent and chat again give the
        logged reply without a call."""
        key = hashlib.sha256(
            json.dumps([agent, chat], sort_keys=True).encode()
        ).hexdigest()
        if key in self._cache:
            return self._cache[key]["reply"]
        started = time.perf_counter()
        generation = self.policy.generate([chat], self.params)[0]
        row = {"key": key, "agent": agent, "reply": generation.text,
               "prompt_tokens": generation.prompt_tokens,
               "completion_tokens": generation.completion_tokens,
               "seconds": round(time.perf_counter() - started, 3),
               "model": self.policy.model_id}  # fmt: skip
        self._append(row)
        self._cache[key] = row
        return generation.text

    def _append(self, row: dict) -> None:
        self.calls.parent.mkdir(parents=True, exist_ok=True)
        with open(self.calls, "a") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def read_calls(path: Path) -> list[dict]:
    """The logged calls; a last line cut short by a crash is skipped."""
    if not Path(path).exists():
        return []
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def usage(path: Path) -> dict[str, dict[str, float]]:
    """Calls, tokens and seconds per agent, from a call log."""
    totals: dict[str, dict[str, float]] = defaultdict(
        lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
    )
    for row in read_calls(path):
        entry = totals[row["agent"]]
        entry["calls"] += 1
        for field in ("prompt_tokens", "completion_tokens", "seconds"):
            entry[field] += row[field]
    return dict(totals)

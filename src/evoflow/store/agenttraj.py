"""AgentTraj JSON (AgentGym's trajectory format) to and from episodes.

AgentTraj is a list of ``{"item_id": "<env>_<idx>", "conversations": [{"from":
"human"|"gpt", "loss": null|false|true, "value": str}]}``. It has no system role:
on export a system message becomes the opening human turn followed by a short
assistant acknowledgement that carries no loss, the layout AgentGym's own data
uses. Import keeps every message and loss flag as found, so AgentTraj → episodes
→ AgentTraj is lossless.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evoflow.atomic import atomic_path
from evoflow.errors import StoreError
from evoflow.store.schema import Episode, Message

FROM_ROLE = {"human": "user", "gpt": "assistant"}
TO_ROLE = {"user": "human", "assistant": "gpt"}
ACKNOWLEDGEMENT = "OK"


def read_agenttraj(
    path: str | Path,
    experiment: str,
    method: str = "expert",
    split: str = "train",
    model_id: str = "agenttraj",
) -> list[Episode]:
    """Episodes from an AgentTraj JSON file.

    AgentTraj keeps only expert trajectories that solved their task, so an item
    without ``reward``/``success`` keys is recorded as reward 1 and success.
    """
    path = Path(path)
    try:
        items = json.loads(path.read_text())
    except OSError as exc:
        raise StoreError(f"{path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(items, list):
        raise StoreError(
            f"{path}: expected a JSON list of items, got {type(items).__name__}"
        )
    return [
        _item_to_episode(item, f"{path}[{i}]", experiment, method, split, model_id)
        for i, item in enumerate(items)
    ]


def _item_to_episode(
    item: Any, where: str, experiment: str, method: str, split: str, model_id: str
) -> Episode:
    if not isinstance(item, dict) or not isinstance(item.get("item_id"), str):
        raise StoreError(f"{where}: item lacks a string 'item_id'")
    env, sep, task_id = item["item_id"].rpartition("_")
    if not sep or not env or not task_id:
        raise StoreError(f"{where}: item_id {item['item_id']!r} is not '<env>_<idx>'")
    conversations = item.get("conversations")
    if not isinstance(conversations, list):
        raise StoreError(f"{where}: 'conversations' must be a list")
    messages = []
    for j, turn in enumerate(conversations):
        if not isinstance(turn, dict) or turn.get("from") not in FROM_ROLE:
            raise StoreError(f"{where}.conversations[{j}]: 'from' must be human or gpt")
        if not isinstance(turn.get("value"), str):
            raise StoreError(f"{where}.conversations[{j}]: 'value' must be a string")
        loss = turn.get("loss")
        if loss not in (None, True, False):
            raise StoreError(
                f"{where}.conversations[{j}]: 'loss' must be null/true/false"
            )
        messages.append(Message(FROM_ROLE[turn["from"]], turn["value"], loss))
    trained = [m for m in messages if m.role == "assistant" and m.loss is not False]
    reward = float(item.get("reward", 1.0))
    return Episode(
        experiment=experiment,
        method=method,
        env=env,
        task_id=task_id,
        split=split,
        episode_id=item["item_id"],
        source="expert",
        model_id=model_id,
        reward=reward,
        success=bool(item.get("success", reward >= 1.0)),
        n_turns=len(trained),
        messages=messages,
    )


def episode_to_item(episode: Episode) -> dict[str, Any]:
    """One AgentTraj item for an episode."""
    conversations = []
    for message in episode.messages:
        if message.role == "system":
            conversations.append(
                {"from": "human", "loss": None, "value": message.content}
            )
            conversations.append(
                {"from": "gpt", "loss": False, "value": ACKNOWLEDGEMENT}
            )
        else:
            conversations.append(
                {
                    "from": TO_ROLE[message.role],
                    "loss": message.loss,
                    "value": message.content,
                }
            )
    return {
        "item_id": f"{episode.env}_{episode.task_id}",
        "conversations": conversations,
    }


def write_agenttraj(path: str | Path, episodes: list[Episode]) -> Path:
    """Write episodes as an AgentTraj JSON list, atomically."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        json.dump([episode_to_item(e) for e in episodes], fh, ensure_ascii=False)
    return path

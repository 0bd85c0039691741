from __future__ import annotations

import json

import pytest

from evoflow.cli import main
from evoflow.errors import StoreError
from evoflow.store import read_agenttraj, read_shard, table_to_episodes, write_agenttraj
from tests.helpers import make_episode

AGENTGYM_ITEMS = [
    {
        "item_id": "webshop_12",
        "conversations": [
            {
                "from": "human",
                "loss": None,
                "value": "You are web shopping. Reply with Action: ...",
            },
            {"from": "gpt", "loss": False, "value": "Ok."},
            {"from": "human", "loss": None, "value": "WebShop [SEP] Instruction: ..."},
            {
                "from": "gpt",
                "loss": True,
                "value": "Thought: search.\nAction: search[red mug]",
            },
            {"from": "human", "loss": None, "value": "[SEP] Results ..."},
            {
                "from": "gpt",
                "loss": True,
                "value": "Thought: buy.\nAction: click[buy now]",
            },
        ],
    },
    {
        "item_id": "sci_world_3",
        "conversations": [{"from": "human", "loss": None, "value": "Task"}],
    },
]


def test_agenttraj_round_trip_is_lossless(tmp_path):
    # Prepare
    source = tmp_path / "in.json"
    source.write_text(json.dumps(AGENTGYM_ITEMS))

    # Execute
    episodes = read_agenttraj(source, experiment="exp")
    out = write_agenttraj(tmp_path / "out.json", episodes)

    # Assert
    assert json.loads(out.read_text()) == AGENTGYM_ITEMS
    assert [(e.env, e.task_id) for e in episodes] == [
        ("webshop", "12"),
        ("sci_world", "3"),
    ]
    assert episodes[0].n_turns == 2 and episodes[0].success


def test_cli_import_then_export_round_trips(tmp_path):
    source = tmp_path / "in.json"
    source.write_text(json.dumps(AGENTGYM_ITEMS))
    shard = tmp_path / "expert" / "demos.parquet"
    assert (
        main(["import-agenttraj", str(source), str(shard), "--experiment", "exp"]) == 0
    )
    assert read_shard(shard).num_rows == 2
    out = tmp_path / "out.json"
    assert main(["export-agenttraj", str(shard), "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == AGENTGYM_ITEMS


def test_system_message_exports_as_instruction_and_acknowledgement(tmp_path):
    out = write_agenttraj(tmp_path / "o.json", [make_episode(3)])
    item = json.loads(out.read_text())[0]
    assert item["item_id"] == "maze_103"
    assert [c["from"] for c in item["conversations"]] == [
        "human",
        "gpt",
        "human",
        "gpt",
        "human",
    ]
    assert item["conversations"][1] == {"from": "gpt", "loss": False, "value": "OK"}
    assert item["conversations"][3]["loss"] is True
    back = read_agenttraj(out, experiment="exp")[0]
    assert [m.content for m in back.messages if m.role == "assistant"][1:] == [
        m.content for m in make_episode(3).messages if m.role == "assistant"
    ]
    assert table_to_episodes  # imported for the CLI path above


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"item_id": "x_1"}, "expected a JSON list"),
        ([{"conversations": []}], "lacks a string 'item_id'"),
        ([{"item_id": "noindex", "conversations": []}], "is not '<env>_<idx>'"),
        (
            [{"item_id": "a_1", "conversations": [{"from": "bot", "value": "x"}]}],
            "human or gpt",
        ),
        (
            [{"item_id": "a_1", "conversations": [{"from": "gpt", "value": 3}]}],
            "'value' must be a string",
        ),
    ],
)
def test_malformed_agenttraj_names_the_item(tmp_path, payload, message):
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(payload))
    with pytest.raises(StoreError, match=message):
        read_agenttraj(source, experiment="exp")

"""The server's side with Flower messages delivered in-process: which node is
which client (extras left out, the missing named with what went wrong), and a
round's replies — a good adapter is kept, an error reply, a reply carrying
anything but adapter records and a missing reply each lose their client with
the reason."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.supercore.task_identity import TaskIdentity

from evoflow.fed.adapters import Adapter, load_adapter
from evoflow.federate import wire
from evoflow.federate.server import FederationError, collect, identify, readmit
from evoflow.helmsman.runtime import RUN_ID, LocalGrid

CONFIG = {"peft_type": "LORA", "r": 1, "lora_alpha": 2, "target_modules": ["q"],
          "base_model_name_or_path": "tiny"}  # fmt: skip
client_app = ClientApp()


@client_app.train()
def train(message: Message, context: Context) -> Message:
    name = context.node_config["client"]
    if name == "crashes":
        raise RuntimeError("out of memory")
    adapter = Adapter(Path("."), CONFIG, {"q.lora_A.weight": torch.ones(1, 3)})
    reply = wire.encode_adapter(adapter, "fp32", name)
    if name == "leaks":
        reply["episodes"] = ConfigRecord({"first": "You are in a maze."})
    return Message(reply, reply_to=message)


class SilentGrid(LocalGrid):
    """Never delivers the reply of the client named ``silent``."""

    def send_and_receive(self, messages, *, timeout=None):
        replies = super().send_and_receive(messages, timeout=timeout)
        return [r for r in replies if self.names[r.metadata.src_node_id] != "silent"]


def test_each_reply_is_kept_or_its_client_lost_with_the_reason(tmp_path):
    names = ["good", "crashes", "leaks", "silent"]
    grid = _grid(names, client_app, SilentGrid)
    grid.names = {i: n for i, n in enumerate(names, start=1)}
    asks = [Message(RecordDict(), i, "train") for i in grid.get_node_ids()]
    folders, lost = collect(grid, asks, names, lambda c: str(tmp_path / c / "adapter"),
                            str(tmp_path / "wire.jsonl"), timeout=5)  # fmt: skip
    assert list(folders) == ["good"]
    assert load_adapter(folders["good"]).tensors["q.lora_A.weight"].sum() == 3
    assert "out of memory" in lost["crashes"]
    assert lost["leaks"].startswith("bad message: unexpected record 'episodes'")
    assert lost["silent"] == "no reply within 5 s"
    logged = [
        json.loads(line) for line in (tmp_path / "wire.jsonl").read_text().splitlines()
    ]
    assert [e["client"] for e in logged] == [
        "good",
        "leaks",
    ]  # what arrived is on record
    assert logged[1]["records"]["episodes"]["type"] == "ConfigRecord"


query_app = ClientApp()


@query_app.query()
def who(message: Message, context: Context) -> Message:
    name = context.node_config["client"]
    if name == "broken":
        raise ValueError("SuperNode --node-config lacks root")
    return Message(
        RecordDict({wire.META: ConfigRecord({"client": name})}), reply_to=message
    )


def _grid(names: list[str], app: ClientApp | None = None, kind=LocalGrid) -> LocalGrid:
    """In-process nodes 1, 2, ... named ``names`` (their ``client``), running ``app``."""
    TaskIdentity.task_id, TaskIdentity.run_id = 1, RUN_ID
    TaskIdentity.node_id = SUPERLINK_NODE_ID
    contexts = {i: Context(run_id=RUN_ID, node_id=i, node_config={"client": n},
                           state=RecordDict(), run_config={})
                for i, n in enumerate(names, start=1)}  # fmt: skip
    return kind(app or query_app, contexts)


def test_identify_maps_clients_to_nodes_and_names_the_missing():
    found = identify(
        _grid(["wordle", "stranger", "maze", "maze"]), ["maze", "wordle"], 5
    )
    assert found == {
        "maze": 3,
        "wordle": 1,
    }  # config order; the first maze; others left out
    with pytest.raises(
        FederationError, match=r"client\(s\) wordle \(node 1: .*lacks root"
    ):
        identify(_grid(["broken", "maze"]), ["maze", "wordle"], 5)


def test_a_restarted_supernode_is_readmitted_under_its_new_id():
    grid = _grid(["maze", "wordle"])
    nodes = identify(grid, ["maze", "wordle"], 5)
    asked = set(nodes.values())
    assert readmit(grid, nodes, 5, asked) == nodes  # nothing new: nothing asked
    # wordle's SuperNode restarts under node 7; node 8 claims to be maze, whose
    # node 1 is alive, and node 9 belongs to another run
    restarted = grid._contexts.pop(2)
    for node, name in ((7, "wordle"), (8, "maze"), (9, "other")):
        grid._contexts[node] = Context(run_id=RUN_ID, node_id=node,
                                       node_config={"client": name}, state=RecordDict(),
                                       run_config={})  # fmt: skip
    assert restarted.node_config["client"] == "wordle"
    assert readmit(grid, nodes, 5, asked) == {"maze": 1, "wordle": 7}
    assert asked == {1, 2, 7, 8, 9}  # each asked once
    # wordle's node goes and nothing takes its place: wait at most the timeout
    grid._contexts.pop(7)
    started = time.monotonic()
    assert readmit(grid, {"maze": 1, "wordle": 7}, 1.0, asked) == {
        "maze": 1,
        "wordle": 7,
    }
    assert 1.0 <= time.monotonic() - started < 3.0

"""The records a client and the server exchange: adapters survive the trip
(fp32 exactly; bf16 as the simulation's bf16 uplink rounds them, in half the
bytes), and anything else on the wire is refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, RecordDict

from evoflow.fed.adapters import Adapter, load_adapter
from evoflow.fed.comm import over_the_wire
from evoflow.federate import wire
from evoflow.federate.client import node_settings, site_training

CONFIG = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"],
          "base_model_name_or_path": "tiny"}  # fmt: skip


def _adapter() -> Adapter:
    g = torch.Generator().manual_seed(0)
    tensors = {"a.lora_A.weight": torch.randn(2, 8, generator=g),
               "a.lora_B.weight": torch.randn(8, 2, generator=g) * 1e-3}  # fmt: skip
    return Adapter(Path("."), CONFIG, tensors)


def test_fp32_round_trip_is_exact():
    adapter = _adapter()
    config, tensors, client = wire.decode_adapter(
        wire.encode_adapter(adapter, "fp32", "maze")
    )
    assert config == CONFIG and client == "maze"
    for name, tensor in adapter.tensors.items():
        assert torch.equal(tensors[name], tensor)


def test_bf16_uplink_rounds_like_the_simulation_in_half_the_bytes():
    adapter = _adapter()
    half = wire.encode_adapter(adapter, "bf16")
    full = wire.encode_adapter(adapter, "fp32")
    _, tensors, _ = wire.decode_adapter(half)
    expected = over_the_wire(adapter.tensors, "bf16")
    for name in expected:
        assert torch.equal(tensors[name], expected[name])
    payload = {k: len(a.data) for k, a in half[wire.ADAPTER].items()}
    for name, array in full[wire.ADAPTER].items():
        header = len(array.data) - 4 * adapter.tensors[name].numel()
        assert payload[name] == header + 2 * adapter.tensors[name].numel()
    assert half[wire.ADAPTER]["a.lora_A.weight"].numpy().dtype == np.uint16


def test_arrays_that_are_not_what_the_message_says_are_refused():
    content = wire.encode_adapter(_adapter(), "fp32")
    content[wire.META]["dtype"] = wire.BF16_BITS  # float32 arrays labelled bf16
    with pytest.raises(
        wire.WireError, match="float32 array, but the message says bf16"
    ):
        wire.decode_adapter(content)
    content[wire.META]["dtype"] = "int8"
    with pytest.raises(wire.WireError, match="unknown encoding 'int8'"):
        wire.decode_adapter(content)


def test_a_received_adapter_becomes_a_peft_folder(tmp_path):
    content = wire.encode_adapter(_adapter(), "fp32", "wordle")
    assert wire.write_received(content, tmp_path / "adapter") == "wordle"
    assert load_adapter(tmp_path / "adapter").config == CONFIG


def test_unknown_records_are_refused_by_name():
    content = wire.encode_adapter(_adapter())
    content["episodes"] = ConfigRecord({"text": "go north"})
    with pytest.raises(wire.WireError, match="unexpected record 'episodes'"):
        wire.decode_adapter(content)
    wrong = RecordDict({wire.COUNTS: ArrayRecord([np.zeros(2, dtype=np.float32)])})
    with pytest.raises(wire.WireError, match="'counts' \\(ArrayRecord\\)"):
        wire.check_records(wrong)


def _context(node_config: dict) -> Context:
    return Context(run_id=1, node_id=2, node_config=node_config, state=RecordDict(),
                   run_config={})  # fmt: skip


def test_a_supernode_must_say_which_client_it_is():
    with pytest.raises(ValueError, match="lacks root"):
        node_settings(_context({"client": "maze"}))
    assert node_settings(_context({"client": "maze", "root": "/d"})) == ("maze", "/d")


def test_site_training_overrides_name_unknown_settings():
    from evoflow.config import load_config
    from evoflow.methods import methods_from_config
    from tests.workflow.conftest import ROOT

    method = methods_from_config(
        load_config(ROOT / "tests/configs/tiny_federate.yaml")
    )["fedse"]
    site = site_training(method, _context({"train.lora_r": 4}))
    assert site.sft.lora_r == 4 and method.sft.lora_r != 4
    with pytest.raises(ValueError, match="train.lora_rank: no such SFT setting"):
        site_training(method, _context({"train.lora_rank": 4}))


def test_federate_refuses_a_method_that_is_not_federated(tmp_path):
    from evoflow.errors import EvoflowError
    from evoflow.federate.launch import federate
    from tests.workflow.conftest import ROOT

    text = (ROOT / "tests/configs/tiny_federate.yaml").read_text()
    config = tmp_path / "c.yaml"
    config.write_text(text.replace("  fedse: {}", "  local: {}"))
    with pytest.raises(
        EvoflowError, match="'local' is of kind 'local', which is not federated"
    ):
        federate(config, "local", tmp_path)
    assert not (tmp_path / "federation").exists()  # refused before starting anything


def test_a_client_that_missed_a_round_carries_its_last_buffer_over(tmp_path):
    from evoflow.config import load_config
    from evoflow.federate.steps import carried_buffer, client_layout
    from evoflow.methods import methods_from_config
    from tests.workflow.conftest import ROOT

    config = load_config(ROOT / "tests/configs/tiny_federate.yaml")
    method = methods_from_config(config)["fedse"]
    layout = client_layout(tmp_path, config)
    assert carried_buffer(layout, method, 3, "maze") is None  # nothing yet: the demos
    first = Path(layout.client("fedse", 1, "maze", "buffer.json"))
    first.parent.mkdir(parents=True)
    first.write_text("{}")
    assert carried_buffer(layout, method, 3, "maze") == str(first)  # round 2 was missed
    second = Path(layout.client("fedse", 2, "maze", "buffer.json"))
    second.parent.mkdir(parents=True)
    second.write_text("{}")
    assert carried_buffer(layout, method, 3, "maze") == str(second)

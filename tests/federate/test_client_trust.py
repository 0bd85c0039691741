"""A SuperNode checks the config the server sends before acting on it: the
schema (its experiment name becomes a folder) and the hash it must be pinned to."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from evoflow.config import config_hash, load_config
from evoflow.errors import ConfigError
from evoflow.federate.client import received_config

CONFIG = load_config(Path(__file__).parents[1] / "configs" / "tiny_federate.yaml")


def node(**config) -> SimpleNamespace:
    return SimpleNamespace(node_config={"client": "maze", "root": "/data", **config})


def test_an_experiment_name_that_leaves_the_store_is_refused():
    escaping = {**CONFIG, "experiment": "../../outside"}
    with pytest.raises(ConfigError, match="config sent by the server: .*experiment"):
        received_config(json.dumps(escaping), node())


def test_a_pinned_node_takes_only_its_config():
    pin = config_hash(CONFIG)
    assert received_config(json.dumps(CONFIG), node(config_sha256=pin)) == CONFIG
    other = {**CONFIG, "seed": CONFIG["seed"] + 1}
    with pytest.raises(ValueError, match=f"not the {pin} this SuperNode is pinned to"):
        received_config(json.dumps(other), node(config_sha256=pin))


def test_a_node_without_a_pin_takes_no_config():
    with pytest.raises(ValueError, match="not pinned to an experiment config"):
        received_config(json.dumps(CONFIG), node())

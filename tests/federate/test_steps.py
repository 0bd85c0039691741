"""A federated RL client's round under Flower, before any model is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from evoflow.config import load_config
from evoflow.federate.steps import client_layout, rl_client_round
from evoflow.methods import methods_from_config

CONFIG = load_config(Path(__file__).parents[1] / "configs" / "tiny_federate.yaml")


def test_a_federated_rl_client_that_missed_a_round_is_refused(tmp_path):
    # round 2 without its own state of round 1: no optimizer or KL reference to
    # resume, so the client stays out rather than train against another reference
    method = methods_from_config(CONFIG)["fedrl"]
    layout = client_layout(tmp_path, CONFIG)
    with pytest.raises(FileNotFoundError, match="client maze: no RL state of round 1"):
        rl_client_round(CONFIG, method, "maze", 2, None, layout)

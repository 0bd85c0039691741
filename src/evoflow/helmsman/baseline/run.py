"""Entry point of the baseline codebase: one in-process Flower federation
with the settings of ``run_config.json``."""

from __future__ import annotations

import json
import random

import numpy as np
from client_app import app as client_app
from flower_runtime import run_federation
from server_app import app as server_app

with open("run_config.json") as handle:
    config = json.load(handle)
random.seed(config["seed"])  # Flower samples clients with `random`
np.random.seed(config["seed"])
run_federation(
    server_app, client_app, num_nodes=int(config["clients"]), run_config=config
)

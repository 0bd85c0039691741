"""Pieces of a Flower run for testing one baseline strategy module outside
the sandbox: the module imported as the sandbox does, and a client's reply."""

from __future__ import annotations

import sys

import numpy as np

from evoflow.helmsman import codebase


def strategy_module(name: str, monkeypatch):
    """Import a baseline strategy module the way the sandbox does."""
    folder = codebase.resources.files("evoflow.helmsman") / "baseline"
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.syspath_prepend(str(folder / "strategies"))
    for module in ("task", name):
        sys.modules.pop(module, None)
    return __import__(name)


def reply(arrays, **metrics):
    """A client's train reply carrying ``arrays`` and ``metrics``."""
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict

    content = RecordDict({"arrays": ArrayRecord([np.asarray(a, dtype=np.float64) for a in arrays]),
                          "metrics": MetricRecord(metrics)})  # fmt: skip
    return Message(content, dst_node_id=1, message_type="train")

"""The Flower ``ClientApp`` of a federated method: one SuperNode per client
(``--node-config 'client="<env>" root="<folder>"'``). Asked who it is, it
names its client; asked to train, it writes the adapter the server sent into
its own store, runs the round there (``steps.client_round``) and sends back
the trained adapter's tensors and counts — its trajectories never leave."""

from __future__ import annotations

import dataclasses
import json
import logging

from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from evoflow.fed.adapters import load_adapter
from evoflow.federate import steps, wire

log = logging.getLogger(__name__)
app = ClientApp()


def node_settings(context: Context) -> tuple[str, str]:
    """(client name, store folder) from the SuperNode's ``--node-config``."""
    config = context.node_config
    missing = [k for k in ("client", "root") if not str(config.get(k, ""))]
    if missing:
        raise ValueError(
            f"SuperNode --node-config lacks {' and '.join(missing)} "
            '(give e.g. \'client="maze" root="/data/evoflow"\')'
        )
    return str(config["client"]), str(config["root"])


def site_training(method, context: Context):
    """The method with this site's own SFT settings (``--node-config
    'train.batch_size=1'``, e.g. for a smaller machine); an adapter that no
    longer fits the others (another ``train.lora_r``) is refused by the server."""
    fields = {f.name for f in dataclasses.fields(method.sft)}
    overrides = {}
    for key, value in context.node_config.items():
        if not key.startswith("train."):
            continue
        if key[len("train.") :] not in fields:
            raise ValueError(f"SuperNode --node-config {key}: no such SFT setting "
                             f"(one of {', '.join(sorted(fields))})")  # fmt: skip
        overrides[key[len("train.") :]] = value
    return dataclasses.replace(method, sft=dataclasses.replace(method.sft, **overrides))


def received_config(text: str, context: Context) -> dict:
    """The experiment config the server sent, checked against the schema (its
    experiment name becomes a folder here) and against the hash this SuperNode
    is pinned to (``--node-config 'config_sha256="<hash>"'``, the hash
    ``evoflow check-config`` prints). A SuperNode without a pin takes no
    config: the server may choose only the method, the round, the uplink dtype
    and the global adapter, never what the client runs or where it writes."""
    from evoflow.config import config_hash, validate_config

    config = validate_config(json.loads(text), "config sent by the server")
    pinned = str(context.node_config.get("config_sha256", ""))
    if not pinned:
        raise ValueError("this SuperNode is not pinned to an experiment config: add "
                         "config_sha256=\"<hash>\" to its --node-config (the last line of "
                         "`evoflow check-config <config>`)")  # fmt: skip
    if config_hash(config) != pinned:
        raise ValueError(f"the server sent a config with sha256 {config_hash(config)}, "
                         f"not the {pinned} this SuperNode is pinned to")  # fmt: skip
    return config


@app.query()
def who(message: Message, context: Context) -> Message:
    client, _ = node_settings(context)
    return Message(
        RecordDict({wire.META: ConfigRecord({"client": client})}), reply_to=message
    )


@app.train()
def train(message: Message, context: Context) -> Message:
    from evoflow.methods import family, methods_from_config

    client, root = node_settings(context)
    task = message.content.config_records[wire.TASK]
    config, round = received_config(str(task["config"]), context), int(task["round"])
    method = site_training(methods_from_config(config)[str(task["method"])], context)
    layout = steps.client_layout(root, config)
    start = None
    expected = family(method).start_adapter(layout, method, round)
    if expected is not None:  # last round's average, or round 1's rl.init adapter
        start = wire.write_start(message.content, expected)
    folder = steps.client_round(config, method, client, round, start, layout)
    reply = wire.encode_adapter(load_adapter(folder), str(task["uplink"]), client)
    reply[wire.COUNTS] = wire.counts_record(folder, sft=method.kind.family != "fedrl")
    return Message(reply, reply_to=message)

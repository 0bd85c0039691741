"""What crosses the network between the server and a client: adapter tensors
(an ``ArrayRecord``), the adapter's PEFT config and a few numbers the server
step uses (``ConfigRecord`` / ``MetricRecord``). Never an episode.

A bf16 uplink sends each tensor's bf16 bit pattern as ``uint16`` arrays (Flower
arrays are NumPy arrays, which have no bf16), so the bytes really halve.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict

from evoflow.atomic import write_json
from evoflow.fed.adapters import Adapter, save_adapter

ADAPTER = "adapter"  # ArrayRecord: the LoRA tensors
META = "adapter_meta"  # ConfigRecord: PEFT config (JSON text), the tensors' dtype, the client
COUNTS = "counts"  # MetricRecord: what the server step reads of training.json
TASK = "task"  # ConfigRecord (down): method, round, the experiment config (JSON text)
# Numbers of a client's training.json that cross: sizes, time, counts.
COUNT_KEYS = ("episodes", "examples", "trained_tokens", "optimizer_steps", "final_loss",
              "seconds", "buffer_episodes", "buffer_successes",
              "buffer_explored_successes")  # fmt: skip
ALLOWED = {ADAPTER: ArrayRecord, META: ConfigRecord, COUNTS: MetricRecord,
           TASK: ConfigRecord}  # fmt: skip
BF16_BITS = "bf16-bits"  # META's dtype when the arrays hold bf16 bit patterns


class WireError(ValueError):
    """A message whose records are not what this protocol sends."""


def encode_adapter(
    adapter: Adapter, dtype: str = "fp32", client: str = ""
) -> RecordDict:
    """An adapter as records: fp32 arrays, or bf16 bit patterns for ``bf16``."""
    if dtype not in ("fp32", "bf16"):
        raise WireError(f"uplink dtype {dtype!r} is not fp32 or bf16")
    arrays = {}
    for name, tensor in adapter.tensors.items():
        if dtype == "bf16":
            bits = tensor.detach().to(torch.bfloat16).contiguous().view(torch.int16)
            arrays[name] = Array(bits.numpy().view(np.uint16))
        else:
            arrays[name] = Array(tensor.detach().to(torch.float32).contiguous().numpy())
    meta = {"config": json.dumps(adapter.config, sort_keys=True),
            "dtype": BF16_BITS if dtype == "bf16" else "fp32", "client": client}  # fmt: skip
    return RecordDict({ADAPTER: ArrayRecord(arrays), META: ConfigRecord(meta)})


def decode_adapter(content: RecordDict) -> tuple[dict, dict[str, torch.Tensor], str]:
    """(PEFT config, fp32 tensors, sending client) of an encoded adapter."""
    check_records(content)
    if ADAPTER not in content.array_records or META not in content.config_records:
        raise WireError(f"message carries no adapter (records: {sorted(content)})")
    meta = content.config_records[META]
    try:
        config = json.loads(str(meta["config"]))
    except (KeyError, json.JSONDecodeError) as exc:
        raise WireError(f"adapter config is not readable JSON ({exc})") from None
    dtype = meta.get("dtype")
    if dtype not in ("fp32", BF16_BITS):
        raise WireError(f"adapter tensors of unknown encoding {dtype!r}")
    tensors = {}
    for name, array in content.array_records[ADAPTER].items():
        values = array.numpy()
        expected = np.uint16 if dtype == BF16_BITS else np.float32
        if values.dtype != expected:
            raise WireError(
                f"{name}: {values.dtype} array, but the message says {dtype}"
            )
        if dtype == BF16_BITS:
            bits = torch.from_numpy(values.view(np.int16).copy())
            tensors[name] = bits.view(torch.bfloat16).to(torch.float32)
        else:
            tensors[name] = torch.from_numpy(values.astype(np.float32, copy=True))
    return config, tensors, str(meta.get("client", ""))


def check_records(content: RecordDict) -> None:
    """Refuse any record this protocol does not define (by name and type)."""
    for name, record in content.items():
        kind = ALLOWED.get(name)
        if kind is None or not isinstance(record, kind):
            raise WireError(
                f"unexpected record {name!r} ({type(record).__name__}) on the wire"
            )


def counts_record(folder: str | Path, sft: bool = True) -> MetricRecord:
    """The numbers of an adapter's training.json that the server step reads
    (``sft`` False: an RL span's adapter, which has none)."""
    summary = json.loads((Path(folder) / "training.json").read_text()) if sft else {}
    return MetricRecord(
        {k: summary[k] for k in COUNT_KEYS if isinstance(summary.get(k), (int, float))}
    )


def write_received(content: RecordDict, folder: str | Path) -> str:
    """Materialise a received adapter (and its counts) as a PEFT folder, the
    form every server step of the simulation reads; returns the client name."""
    config, tensors, client = decode_adapter(content)
    save_adapter(folder, config, tensors)
    counts = content.metric_records.get(COUNTS)
    write_json(Path(folder) / "training.json", dict(counts) if counts else {})
    return client


def write_start(content: RecordDict, folder: str | Path) -> str | None:
    """The adapter a round starts from, as sent down (``None``: round 1's fresh LoRA)."""
    if ADAPTER not in content.array_records:
        return None
    config, tensors, _ = decode_adapter(content)
    save_adapter(folder, config, tensors)
    return str(folder)


def describe(content: RecordDict) -> dict:
    """What one message carried, for the wire log: every record's type and
    keys, the arrays' bytes, and the config/metric values themselves."""
    out = {}
    for name, record in content.items():
        entry = {"type": type(record).__name__, "keys": sorted(record)}
        if isinstance(record, ArrayRecord):
            entry["bytes"] = sum(len(a.data) for a in record.values())
        else:
            entry["values"] = {
                k: v for k, v in record.items() if k != "config" or name != TASK
            }
        out[name] = entry
    return out

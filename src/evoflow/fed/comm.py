"""Communication accounting: what each client sends and receives per round.

Every client uploads its adapter and downloads the global one, so one round
moves ``2 · K · P`` parameters for ``K`` clients and ``P`` adapter parameters.
Sizes are given for fp32 (4 bytes) and bf16 (2 bytes), in bytes and MiB — the
paper's "MB" figures are MiB of fp32 (Llama-2-7B, r=8, all linear layers:
19,988,480 parameters = 76.25 MiB).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

BYTES = {"fp32": 4, "bf16": 2}
MIB = 2**20


@dataclass(frozen=True)
class DecoderShape:
    """The linear layers LoRA wraps in a Llama/Qwen-style decoder block."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int | None = None

    def linear_shapes(self) -> list[tuple[int, int]]:
        """(in, out) of q, k, v, o, gate, up, down in one block."""
        head_dim = self.head_dim or self.hidden // self.heads
        q, kv = self.heads * head_dim, self.kv_heads * head_dim
        h, i = self.hidden, self.intermediate
        return [(h, q), (h, kv), (h, kv), (q, h), (h, i), (h, i), (i, h)]


def lora_parameters(shape: DecoderShape, rank: int) -> int:
    """Parameters of a rank-``rank`` LoRA on every linear layer of every block."""
    per_block = sum(
        rank * (fan_in + fan_out) for fan_in, fan_out in shape.linear_shapes()
    )
    return per_block * shape.layers


PAPER_FP32_MIB = 76.25  # Fed-SE's per-client upload (Llama-2-7B, r = 8)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def over_the_wire(
    state: dict[str, torch.Tensor], uplink: str
) -> dict[str, torch.Tensor]:
    """What the server receives of a client's fp32 adapter sent as ``uplink``
    (bf16: rounded to bf16, then widened back for the average)."""
    return {k: t.to(DTYPES[uplink]).to(t.dtype) for k, t in state.items()}


def round_traffic(parameters: int, clients: int, uplink: str = "fp32") -> dict:
    """Bytes per client and for the whole round, up and down, in fp32 and bf16;
    ``uplink`` is the dtype the clients actually send (the paper's fp32 MiB
    beside it)."""
    per_client = {d: parameters * b for d, b in BYTES.items()}
    return {
        "parameters_per_adapter": parameters,
        "clients": clients,
        "uplink": uplink,
        "uplink_bytes_per_client": per_client[uplink],
        "paper_up_mib_fp32": PAPER_FP32_MIB,
        "per_client": {
            "up_bytes": per_client,
            "down_bytes": per_client,
            "up_mib": {d: v / MIB for d, v in per_client.items()},
        },
        "round_bytes": {d: 2 * clients * v for d, v in per_client.items()},
        "round_mib": {d: 2 * clients * v / MIB for d, v in per_client.items()},
    }


def with_cumulative(traffic: dict, previous: dict | None) -> dict:
    """Add cumulative totals over rounds (``previous`` is last round's record)."""
    before = previous["cumulative_bytes"] if previous else {d: 0 for d in BYTES}
    total = {d: before[d] + traffic["round_bytes"][d] for d in BYTES}
    return {
        **traffic,
        "cumulative_bytes": total,
        "cumulative_mib": {d: v / MIB for d, v in total.items()},
    }

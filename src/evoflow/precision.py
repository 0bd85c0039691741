"""Which floating-point format a device computes fast, and the dtypes we pick.

bf16 halves memory traffic everywhere, but it is only *fast* where the hardware
multiplies bf16 natively: CUDA GPUs, and CPUs with AVX512-BF16 or AMX tiles. On
other CPUs (AVX2 machines, many laptops) torch runs bf16 matmuls through a
reference kernel that is about a hundred times slower than fp32, so ``auto``
must mean fp32 there. ``EVOFLOW_CPU_BF16=1`` (or ``0``) overrides the CPU
detection, e.g. to reproduce a bf16 run bit for bit on another machine.

Training keeps LoRA weights and optimizer state in fp32 and runs the forward
pass under bf16 autocast; inference stores the weights in bf16.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads lazily: configs are checked without it
    import torch

PRECISIONS = ("auto", "float32", "bfloat16")
OVERRIDE = "EVOFLOW_CPU_BF16"


@cache
def cpu_has_fast_bf16() -> bool:
    """True when this CPU multiplies bf16 in hardware (AVX512-BF16 or AMX)."""
    forced = os.environ.get(OVERRIDE, "").strip().lower()
    if forced in ("1", "true", "yes"):
        return True
    if forced in ("0", "false", "no"):
        return False
    if forced:
        raise ValueError(f"{OVERRIDE}={forced!r}: use 1 or 0 (unset: detect)")
    import torch

    cpu = torch.cpu
    return bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())


def fast_bf16(device: torch.device | str) -> bool:
    """Whether bf16 pays on ``device`` (a CUDA GPU with bf16, or a bf16 CPU)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return device.type == "cpu" and cpu_has_fast_bf16()


def resolve_dtype(name: str, device: torch.device | str) -> torch.dtype:
    """The dtype ``name`` stands for on ``device`` (``auto``: bf16 where it pays)."""
    import torch

    if name == "auto":
        return torch.bfloat16 if fast_bf16(device) else torch.float32
    if name not in PRECISIONS:
        raise ValueError(f"precision {name!r} is not one of {', '.join(PRECISIONS)}")
    return getattr(torch, name)

"""Load, check and save PEFT LoRA adapter folders as plain tensors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from evoflow.atomic import atomic_path

CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"
VELOCITY = "server_velocity.safetensors"  # FedAvgM's state, beside a global adapter
# Fields that must agree for adapters to be averaged element-wise.
MUST_MATCH = (
    "peft_type",
    "r",
    "lora_alpha",
    "target_modules",
    "base_model_name_or_path",
)


class AdapterMismatch(ValueError):
    """Adapters that cannot be combined (different rank, targets or base model)."""


@dataclass
class Adapter:
    folder: Path
    config: dict
    tensors: dict[str, torch.Tensor]

    @property
    def parameters(self) -> int:
        return sum(t.numel() for t in self.tensors.values())


def load_adapter(folder: str | Path) -> Adapter:
    """Read an adapter folder (config + safetensors weights)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a PEFT adapter folder")
    try:
        config = json.loads((folder / CONFIG).read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{folder}: no {CONFIG}; not a PEFT adapter folder"
        ) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{folder / CONFIG}: not valid JSON ({exc})") from None
    if not (folder / WEIGHTS).is_file():
        raise FileNotFoundError(f"{folder}: no {WEIGHTS}")
    return Adapter(folder, config, load_file(folder / WEIGHTS))


def check_compatible(adapters: list[Adapter]) -> None:
    """Raise ``AdapterMismatch`` naming the first field or tensor that differs."""
    if not adapters:
        raise AdapterMismatch("no adapters to aggregate")
    first = adapters[0]
    for other in adapters[1:]:
        for field in MUST_MATCH:
            a, b = first.config.get(field), other.config.get(field)
            if isinstance(a, list) and isinstance(b, list):
                a, b = sorted(a), sorted(b)
            if a != b:
                raise AdapterMismatch(
                    f"{other.folder}: {field} is {b!r} but {first.folder} has {a!r}; "
                    "only adapters of the same rank, targets and base model can be averaged"
                )
        if first.tensors.keys() != other.tensors.keys():
            missing = sorted(first.tensors.keys() ^ other.tensors.keys())[:3]
            raise AdapterMismatch(
                f"{other.folder}: tensor names differ from {first.folder} (e.g. {missing})"
            )
        for name, tensor in first.tensors.items():
            if other.tensors[name].shape != tensor.shape:
                raise AdapterMismatch(
                    f"{other.folder}: {name} has shape {tuple(other.tensors[name].shape)}, "
                    f"{first.folder} has {tuple(tensor.shape)}"
                )


def save_adapter(
    folder: str | Path,
    config: dict,
    tensors: dict[str, torch.Tensor],
    velocity: dict[str, torch.Tensor] | None = None,
) -> Path:
    """Write an adapter folder atomically (a reader sees all of it or none);
    with ``velocity``, the server's momentum beside the weights."""
    folder = Path(folder)
    with atomic_path(folder) as tmp:
        tmp.mkdir(parents=True)
        (tmp / CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        save_file({k: v.contiguous() for k, v in tensors.items()}, tmp / WEIGHTS)
        if velocity is not None:
            save_file({k: v.contiguous() for k, v in velocity.items()}, tmp / VELOCITY)
    return folder

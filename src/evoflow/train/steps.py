"""Which examples each optimizer step of LoRA SFT sees, in which order.

The count of steps follows from the number of examples (and whether each was
explored) and the SFT settings alone, never from the weights: a job can know
how many steps another job takes without training (``evoflow.train.run.planned_steps``).
"""

from __future__ import annotations

import math

from evoflow.seeding import py_random
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_data import Example


def _batches(
    examples: list[Example], config: SFTConfig, epoch: int, stream: str = "sft-order"
) -> list[list[Example]]:
    """Length-sorted micro-batches, in a seeded random order per epoch."""
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i].input_ids), i))
    batches = [
        [examples[i] for i in order[k : k + config.batch_size]]
        for k in range(0, len(order), config.batch_size)
    ]
    py_random(config.seed, stream, epoch).shuffle(batches)
    return batches


def step_groups(examples: list[Example], config: SFTConfig) -> list[list]:
    """Micro-batches grouped per optimizer step: over all (fractional) epochs;
    or cycled over as many passes as ``config.steps`` needs; or, with
    ``config.explored_steps``, ``steps`` cycled over the expert demonstrations
    and up to ``explored_steps`` (``epochs`` passes at most) over the explored
    episodes, the two mixed in a seeded order."""
    if config.steps and config.explored_steps:
        micro = _mixed(examples, config)
    elif config.steps:
        micro = _cycled(examples, config.steps * config.grad_accum, config)
    else:
        micro = _epoch_batches(examples, config)
    return [
        micro[k : k + config.grad_accum]
        for k in range(0, len(micro), config.grad_accum)
    ]


def _cycled(
    examples: list[Example], wanted: int, config: SFTConfig, stream: str = "sft-order"
) -> list[list[Example]]:
    """``wanted`` micro-batches: passes over ``examples``, each in a new order."""
    if not examples:
        return []
    per_pass = math.ceil(len(examples) / config.batch_size)
    passes = math.ceil(wanted / per_pass)
    micro = [b for e in range(passes) for b in _batches(examples, config, e, stream)]
    return micro[:wanted]


def _mixed(examples: list[Example], config: SFTConfig) -> list[list[Example]]:
    """The demonstrations' budget (``steps``) and the explored episodes' own
    (``explored_steps``, at most ``epochs`` passes), shuffled together."""
    demos = [e for e in examples if not e.explored]
    found = [e for e in examples if e.explored]
    most = math.ceil(config.epochs * math.ceil(len(found) / config.batch_size))
    extra = min(config.explored_steps * config.grad_accum, most)
    micro = _cycled(demos, config.steps * config.grad_accum, config)
    micro += _cycled(found, extra, config, "sft-explored-order")
    py_random(config.seed, "sft-mix").shuffle(micro)
    return micro


def _epoch_batches(examples: list[Example], config: SFTConfig) -> list[list]:
    full_epochs = math.ceil(config.epochs)
    per_epoch = [_batches(examples, config, e) for e in range(full_epochs)]
    if config.epochs < full_epochs:  # a fractional last epoch
        keep = max(1, round(len(per_epoch[-1]) * (config.epochs - full_epochs + 1)))
        per_epoch[-1] = per_epoch[-1][:keep]
    return [b for epoch in per_epoch for b in epoch]

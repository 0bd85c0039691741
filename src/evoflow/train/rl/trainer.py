"""Multi-turn RL of a LoRA policy, one span of training steps at a time.

A span loads the model once and runs ``steps`` training steps from global step
``start``. Each step (its draws in ``evoflow.train.rl.rollouts``) draws ``tasks_per_step`` training tasks (seeded by the
step), plays ``samples_per_task`` episodes of each with the current adapter at
the horizon the schedule gives for that step, drops unusable samples (a
non-finite reward, an environment error, a turn without token ids) and counts
them, computes advantages and updates the LoRA (``evoflow.train.rl.update``).
With ``dynamic_sampling`` only groups whose rewards differ train, and more
tasks are drawn until there are ``tasks_per_step`` of them (DAPO); a step
without any skips the update rather than step on the KL term alone.

Hand-off to the rollout backend is by adapter folder: before each step the
current LoRA is saved and the policy generates with it, exactly as a vLLM
engine takes a new ``LoRARequest`` every step. A span writes, atomically, one
folder (``SPAN_FILES``): the adapter, the resumable state (optimizer, critic,
RNG, next step), every episode it played (schema v2: token ids, log-probs,
rewards, groups) and per-step metrics. The next span starts from that folder
alone, so a killed span reruns from its predecessor and ends the same.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from evoflow.atomic import atomic_path, write_json
from evoflow.policy.base import Policy
from evoflow.precision import resolve_dtype
from evoflow.seeding import derive_seed
from evoflow.store.schema import Episode
from evoflow.store.shards import ShardMeta, write_shard
from evoflow.train.rl import reference as rl_reference
from evoflow.train.rl.config import RLConfig
from evoflow.train.rl.data import collate, turn_sequences
from evoflow.train.rl.groups import (
    anchor_states,
    group_key,
    zero_variance_share,
)
from evoflow.train.rl.rollouts import Span, TaskPool, collect, episode_metrics, usable
from evoflow.train.rl.update import ValueHead, token_advantages, update, values_of
from evoflow.train.sft_trainer import load_lora_model, peak_rss_mb, portable_config

log = logging.getLogger(__name__)
ADAPTER, STATE, ROLLOUTS, METRICS = (
    "adapter",
    "state.pt",
    "rollouts.parquet",
    "metrics.json",
)
SPAN_FILES = (ADAPTER, STATE, ROLLOUTS, METRICS)


@dataclass
class Learner:
    tokenizer: object
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    critic: ValueHead | None
    dtype: torch.dtype
    reference: str | None = None  # the frozen KL-reference adapter (None: base)
    adapters: tuple[str, ...] = ()  # more trainable adapters beside "default"


def run_span(span: Span, config: RLConfig, pool: TaskPool, policy: Policy,
             output: str | Path, previous: str | Path | None = None,
             init_adapter: str | Path | None = None,
             progress: bool = True) -> dict:  # fmt: skip
    """Train steps ``span.start`` … ``span.start + span.steps - 1``; write ``output``.

    ``previous`` is the folder of the span before (None for the first);
    ``init_adapter`` starts from e.g. an SFT adapter instead of a fresh LoRA
    (with ``previous``: its state on these weights, see ``load_learner``).
    Returns the metrics also written to ``metrics.json``.
    """
    started = time.perf_counter()
    output = Path(output)
    learner = load_learner(span, config, previous, init_adapter)
    live = output.with_name(f".{output.name}.live")
    rows, episodes = [], []
    try:
        for step in range(span.start, span.start + span.steps):
            played, row = train_step(learner, policy, pool, span, config, step, live)
            episodes += played
            rows.append(row)
            if progress:
                log.info("rl step %d: %s", step, row)
    finally:
        shutil.rmtree(live, ignore_errors=True)
    return write_span(output, learner, span, config, episodes, rows, started)


def write_span(output: Path, learner: Learner, span: Span, config: RLConfig,
               episodes: list[Episode], rows: list[dict], started: float,
               extra: dict[str, Callable[[Path], object]] | None = None) -> dict:  # fmt: skip
    """Write the span folder ``output`` at once: ``SPAN_FILES``, plus each file
    of ``extra`` (name -> a writer given its path); returns the metrics."""
    metrics = {
        "span": {"start": span.start, "steps": span.steps,
                 "seconds": round(time.perf_counter() - started, 2),
                 "peak_rss_mb": peak_rss_mb()},
        "steps": rows, "config": config.to_dict(),
    }  # fmt: skip
    meta = ShardMeta(span.experiment, span.config_hash, span.model, config.seed)
    with atomic_path(output) as tmp:
        tmp.mkdir()
        save_adapter(learner, tmp / ADAPTER, span.model)
        torch.save(span_state(learner, span.start + span.steps), tmp / STATE)
        write_shard(tmp / ROLLOUTS, episodes, meta)
        for name, write in (extra or {}).items():
            write(tmp / name)
        write_json(tmp / METRICS, metrics)
    return metrics


def load_learner(span: Span, config: RLConfig, previous, init_adapter,
                 adapters: tuple[str, ...] = ()) -> Learner:  # fmt: skip
    """The LoRA model, optimizer and critic — fresh, or as ``previous`` left them.

    With both ``previous`` and ``init_adapter`` the span resumes ``previous``'s
    state (optimizer, critic, RNG, KL reference) on ``init_adapter``'s weights:
    a federated client continuing from the server's average. ``adapters`` names
    trainable adapters kept beside ``default`` (one LoRA per role, say); each
    starts as ``init_adapter`` (or fresh) and is saved in a subfolder of the
    adapter folder named after it, PEFT's multi-adapter layout.
    """
    if previous is not None and init_adapter is not None and adapters:
        raise ValueError("a span with several adapters resumes from previous alone")
    state, start = None, init_adapter  # the KL reference of a first span
    if previous is not None:
        start = None  # a resumed span's reference travels in its state
        state = torch.load(Path(previous) / STATE, weights_only=False)
        if state["step"] != span.start:
            raise ValueError(
                f"{previous}: that span ends before step {state['step']}, but this "
                f"span starts at step {span.start}"
            )
        init_adapter = init_adapter or Path(previous) / ADAPTER
    torch.manual_seed(derive_seed(config.seed, "rl-init"))
    tokenizer, model = load_lora_model(span.model, config, init_adapter)
    reference = rl_reference.attach(model, config.reference, start,
                                    state.get("reference") if state else None)  # fmt: skip
    _add_adapters(model, adapters, init_adapter, resumed=previous is not None)
    set_dropout(model, config.lora_dropout, frozen=reference)
    device = next(model.parameters()).device
    groups = [{"params": [p for p in model.parameters() if p.requires_grad],
               "lr": config.learning_rate}]  # fmt: skip
    critic = None
    if config.estimator == "ppo":
        critic = ValueHead(model.config.hidden_size).to(device)
        groups.append({"params": list(critic.parameters()), "lr": config.value_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.0)
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        if critic is not None:
            critic.load_state_dict(state["critic"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
    dtype = resolve_dtype(config.precision, device)
    return Learner(tokenizer, model, optimizer, critic, dtype, reference, adapters)


def set_dropout(model, rate: float, frozen: str | None) -> None:
    """Every trained adapter drops its LoRA input at ``rate``
    (``RLConfig.lora_dropout``), the frozen reference never. A loaded adapter
    otherwise keeps the dropout of the training that wrote it (an SFT start's
    0.05), and the policy trained would not be the one sampled."""
    from torch import nn

    for module in model.modules():
        drops = getattr(module, "lora_dropout", None)
        if isinstance(drops, nn.ModuleDict):
            for name in list(drops.keys()):
                p = 0.0 if name == frozen else rate
                drops[name] = nn.Dropout(p) if p > 0 else nn.Identity()
                drops[name].train(module.training)
    for name, adapter in model.peft_config.items():
        adapter.lora_dropout = 0.0 if name == frozen else rate


def _add_adapters(model, names: tuple[str, ...], source, resumed: bool) -> None:
    """Load (or create) the named adapters; all of them stay trainable."""
    for name in names:
        folder = None if source is None else Path(source) / name if resumed else source
        if resumed and not (folder / "adapter_config.json").is_file():
            raise FileNotFoundError(f"{source}: no adapter {name!r} to resume")
        if folder is None:
            model.add_adapter(name, model.peft_config["default"])
        else:
            model.load_adapter(str(folder), adapter_name=name, is_trainable=True)
    model.set_adapter("default")
    for param_name, parameter in model.named_parameters():
        if any(f".{name}." in param_name for name in names):
            parameter.requires_grad_(True)


def train_step(learner: Learner, policy: Policy, pool: TaskPool, span: Span,
               config: RLConfig, step: int, live: Path) -> tuple[list[Episode], dict]:  # fmt: skip
    """Roll out with the current adapter, then update; returns episodes and metrics."""
    clock = time.perf_counter()
    adapter = live / f"step-{step}"
    save_adapter(learner, adapter, span.model)
    episodes, train, draws = collect(policy, pool, span, config, step, adapter)
    shutil.rmtree(adapter, ignore_errors=True)
    rollout_s = time.perf_counter() - clock
    kept = [e for e in episodes if usable(e)]
    caps = {env: span.horizon(step, env, pool) for env in pool.factories}
    row = episode_metrics(episodes, kept, step, caps)
    row["draws"] = draws
    row["zero_variance_groups"] = zero_variance_share(kept)
    row["trained_groups"] = len({group_key(e) for e in train})
    clock = time.perf_counter()
    stats = learn(learner, train, config, pool.template, row) if train else None
    row.update(update_metrics(stats))
    row["seconds"] = {"rollout": round(rollout_s, 3),
                      **{k: round(v, 3) for k, v in row.pop("_times", {}).items()},
                      "total": round(rollout_s + time.perf_counter() - clock, 3)}  # fmt: skip
    return episodes, row


def learn(learner: Learner, episodes: list[Episode], config: RLConfig, template,
          row: dict, group: Callable[[Episode], str] | None = None):  # fmt: skip
    """One update on ``episodes``; ``group`` names each one's advantage group
    (default: its task — GRPO/RLOO groups; SAGE passes the role)."""
    group = group or group_key
    clock = time.perf_counter()
    sequences = turn_sequences(learner.tokenizer, episodes, template)
    batch = collate(sequences, learner.tokenizer.pad_token_id or 0)
    device = next(learner.model.parameters()).device
    sampled_at = torch.tensor(
        [e.temperature if e.temperature > 0 else 1.0 for e in episodes]
    )
    batch = _to(replace(batch, temperature=sampled_at[batch.trajectory]), device)
    rewards = torch.tensor([e.reward for e in episodes], dtype=torch.float32,
                           device=device)  # fmt: skip
    names = [group(e) for e in episodes]
    groups = torch.tensor([sorted(set(names)).index(n) for n in names], device=device)
    values = None
    if learner.critic is not None:
        values = values_of(learner.model, batch, learner.dtype, learner.critic)
    advantages, returns = token_advantages(batch, rewards, groups, config.estimator,
                                           values, config.gamma, config.lam,
                                           anchors=[anchor_states(e, config.anchor(e.env))
                                                    for e in episodes],
                                           omega=config.step_weight)  # fmt: skip
    prepare = time.perf_counter() - clock
    learner.model.train()
    stats = update(learner.model, learner.optimizer, batch, advantages, config,
                   learner.dtype, learner.critic, returns, values,
                   learner.reference)  # fmt: skip
    learner.model.eval()
    row["_times"] = {
        "prepare": prepare,
        "update": time.perf_counter() - clock - prepare,
    }
    return stats


def update_metrics(stats) -> dict:
    if stats is None:
        return {"updated": False}
    return {"updated": True, "loss": round(stats.loss, 6), "kl": round(stats.kl, 6),
            "entropy": round(stats.entropy, 4),
            "clip_fraction": round(stats.clip_fraction, 4),
            "value_loss": round(stats.value_loss, 6), "tokens": stats.tokens}  # fmt: skip


def _to(batch, device):
    return replace(batch, **{k: getattr(batch, k).to(device) for k in
                             ("input_ids", "attention_mask", "loss_mask",
                              "old_logprobs", "trajectory", "temperature")
                             if getattr(batch, k) is not None})  # fmt: skip


def save_adapter(learner: Learner, folder: Path, model: str) -> None:
    """``default`` in ``folder``, each further adapter in ``folder/<name>``."""
    with atomic_path(folder) as tmp:
        names = ["default", *learner.adapters]
        learner.model.save_pretrained(tmp, selected_adapters=names)
        portable_config(tmp, model)
        for name in learner.adapters:
            portable_config(tmp / name, model)


def train_adapter(learner: Learner, name: str):
    """Make ``name`` the adapter that trains (and generates) until the next call."""
    learner.model.set_adapter(name)
    rl_reference.freeze(learner.model, learner.reference)


def span_state(learner: Learner, next_step: int) -> dict:
    return {
        "step": next_step,
        "optimizer": learner.optimizer.state_dict(),
        "critic": learner.critic.state_dict() if learner.critic else None,
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
        "reference": rl_reference.saved(learner.model, learner.reference),
    }

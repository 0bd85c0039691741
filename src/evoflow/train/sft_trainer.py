"""LoRA SFT on stored episodes: a compact loop instead of TRL's SFTTrainer.

Why our own loop (benchmarks/sft_throughput.py measures it against SFTTrainer on
the same data, and against a plain fp32 loop):

- the loss is computed only at labelled positions, in chunks, without ever
  holding the vocabulary-wide logits of a batch (``lm_loss``);
- batches are formed from length-sorted episodes and right-padded, so padding
  never needs an attention mask (causal attention already keeps real tokens
  from seeing the padding after them) and the fused SDPA kernel runs;
- tokens after an episode's last labelled token (its closing observation) are
  never fed to the model;
- on hardware with fast bf16 (``evoflow.precision``) the forward pass runs under
  bf16 autocast while LoRA weights and AdamW state stay in fp32.

Gradient accumulation averages over all labelled tokens of an optimizer step, so
the loss does not depend on how a step is split into micro-batches.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import torch
from tqdm import tqdm

import evoflow.policy.lean_import  # noqa: F401  (before transformers' models)
from evoflow.atomic import atomic_path
from evoflow.policy.attention import attention_implementation
from evoflow.policy.models import resolve_model
from evoflow.precision import resolve_dtype
from evoflow.train.lm_loss import linear_cross_entropy
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_data import IGNORE, Example, encode_all
from evoflow.train.steps import step_groups

log = logging.getLogger(__name__)
METADATA = "training.json"


def train_sft(
    chats: list[list[dict]],
    model: str,
    output: str | Path,
    config: SFTConfig,
    init_adapter: str | Path | None = None,
    loss_log: str | Path | None = None,
    metadata: dict | None = None,
    progress: bool = True,
    explored: list[bool] | None = None,
) -> dict:
    """Fine-tune a LoRA adapter on ``chats`` and write a PEFT folder to ``output``.

    Parameters
    ----------
    chats
        conversations as ``{"role", "content", "loss"}`` dicts; assistant turns
        are learned unless ``loss`` is False.
    model
        base model name (see ``evoflow.policy.models``).
    init_adapter
        start from this adapter's weights (e.g. the global one) instead of a
        fresh LoRA; its rank and alpha must match ``config``.
    loss_log
        JSON-lines file receiving one record per optimizer step.
    metadata
        extra fields for ``training.json`` (e.g. the buffer manifest's sha256).
    explored
        per chat, whether the client's own exploration found it (not an expert
        demonstration): the pool ``config.explored_steps`` trains on.

    Returns
    -------
    dict
        the training summary also written to ``<output>/training.json``.
    """
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    tokenizer, peft_model = load_lora_model(model, config, init_adapter)
    flags = explored if explored is not None else [False] * len(chats)
    examples, cut, dropped = encode_all(
        tokenizer,
        list(zip(chats, flags, strict=True)),
        config.max_length,
        config.explored_thoughts,
    )
    if cut:
        log.info("train: %d episodes cut to %d tokens", cut, config.max_length)
    if dropped:
        log.warning(
            "train: %d of %d episodes are not trained: even their opening and "
            "last turn exceed max_length=%d (raise train.max_length)",
            dropped,
            len(chats),
            config.max_length,
        )
    steps, curve, tokens = _optimise(
        peft_model, examples, config, tokenizer.pad_token_id or 0, loss_log, progress
    )

    summary = {
        "model": model,
        "init_adapter": str(init_adapter) if init_adapter else None,
        "episodes": len(chats),
        "examples": len(examples),
        "episodes_cut": cut,
        "episodes_dropped": dropped,
        "trained_tokens": tokens,
        "optimizer_steps": steps,
        "loss_curve": curve,
        "final_loss": curve[-1] if curve else None,
        "seconds": round(time.perf_counter() - started, 2),
        "precision": str(_autocast_dtype(config, _device(peft_model))).split(".")[-1],
        "peak_rss_mb": peak_rss_mb(),
        "config": config.to_dict(),
        **(metadata or {}),
    }
    with atomic_path(output) as tmp:
        peft_model.save_pretrained(tmp)
        portable_config(tmp, model)
        (tmp / METADATA).write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def load_lora_model(model: str, config, init_adapter):
    """Tokenizer and LoRA-wrapped model (bf16 weights on GPU, fp32 on CPU)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(model)
    cuda = torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(path)
    base = AutoModelForCausalLM.from_pretrained(
        path,
        dtype=torch.bfloat16 if cuda else torch.float32,
        attn_implementation=attention_implementation(),
    )
    if cuda:
        base = base.to("cuda")
    return tokenizer, with_lora(base, config, init_adapter)


def initial_adapter(model: str, config: SFTConfig) -> dict[str, torch.Tensor]:
    """The fresh LoRA a training job with ``config`` (and no start adapter)
    begins from, rebuilt from the same seed: what round 1's clients of a
    federated method all start from."""
    from peft import get_peft_model_state_dict

    torch.manual_seed(config.seed)
    _, peft_model = load_lora_model(model, config, None)
    return {k: v.detach().to("cpu", torch.float32).clone()
            for k, v in get_peft_model_state_dict(peft_model).items()}  # fmt: skip


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _autocast_dtype(config: SFTConfig, device: torch.device) -> torch.dtype:
    """The compute dtype of the forward pass (weights stay as loaded)."""
    return resolve_dtype(config.precision, device)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux: ru_maxrss KiB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def with_lora(base, config, init_adapter):
    """``base`` wrapped with a trainable LoRA (``config``: any settings with
    ``lora_r``, ``lora_alpha``, ``lora_dropout``, ``target_modules``)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if init_adapter is not None:
        model = PeftModel.from_pretrained(base, str(init_adapter), is_trainable=True)
        loaded = model.peft_config["default"]
        if (loaded.r, loaded.lora_alpha) != (config.lora_r, config.lora_alpha):
            raise ValueError(
                f"{init_adapter}: adapter has r={loaded.r}, alpha={loaded.lora_alpha} but "
                f"training asks for r={config.lora_r}, alpha={config.lora_alpha}"
            )
        return model
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=config.target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(base, lora)


def _optimise(
    model, examples, config: SFTConfig, pad_id: int, loss_log, progress: bool
):
    from transformers import get_cosine_schedule_with_warmup

    if not examples:
        log.warning(
            "train: no trainable examples; the adapter keeps its starting weights"
        )
        return 0, [], 0
    groups = step_groups(examples, config)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=config.learning_rate, weight_decay=config.weight_decay
    )
    schedule = get_cosine_schedule_with_warmup(
        optimizer, int(config.warmup_ratio * len(groups)), len(groups)
    )
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model.train()
    device = _device(model)
    dtype = _autocast_dtype(config, device)
    anchor = [p.detach().clone() for p in params] if config.proximal_mu else None
    curve, trained = [], 0
    sink = open(loss_log, "a") if loss_log else None
    bar = tqdm(
        groups, desc="sft", unit="step", disable=not progress, dynamic_ncols=True
    )
    try:
        for step, group in enumerate(bar, start=1):
            labelled = sum(e.trained_tokens for batch in group for e in batch)
            total = 0.0
            for batch in group:
                loss = _batch_loss(model, batch, pad_id, device, dtype) / labelled
                loss.backward()
                total += loss.item()
            if anchor is not None:
                proximal_grad_(params, anchor, config.proximal_mu)
            torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            trained += labelled
            curve.append(round(total, 6))
            bar.set_postfix(loss=f"{total:.3f}")
            if sink:
                sink.write(json.dumps({"step": step, "loss": total, "lr": schedule.get_last_lr()[0],
                                       "tokens": labelled}) + "\n")  # fmt: skip
                sink.flush()
    finally:
        if sink:
            sink.close()
    model.eval()
    return len(groups), curve, trained


def proximal_grad_(params, anchor, mu: float) -> None:
    """Add the gradient of FedProx's (μ/2)·Σ‖θ − θ_start‖², μ·(θ − θ_start),
    to each parameter's gradient, in place."""
    with torch.no_grad():
        for param, start in zip(params, anchor, strict=True):
            pull = mu * (param - start)
            if param.grad is None:
                param.grad = pull
            else:
                param.grad.add_(pull)


def _batch_loss(
    model, batch: list[Example], pad_id: int, device, dtype=torch.float32
) -> torch.Tensor:
    """Summed cross-entropy over labelled positions; the LM head sees only those.

    Rows are right-padded and no attention mask is passed: under causal
    attention a real token never sees the padding after it, and without a mask
    the fused attention kernel runs. ``dtype`` is the autocast compute dtype.
    """
    width = max(len(e.input_ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    for row, example in enumerate(batch):
        n = len(example.input_ids)
        ids[row, :n] = torch.tensor(example.input_ids)
        labels[row, :n] = torch.tensor(example.labels)
    ids, labels = ids.to(device), labels.to(device)
    inner = model.get_base_model()
    targets = labels[:, 1:]
    chosen = targets != IGNORE
    with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        hidden = inner.get_decoder()(input_ids=ids).last_hidden_state
        return linear_cross_entropy(
            hidden[:, :-1][chosen],
            inner.get_output_embeddings().weight,
            targets[chosen],
        )


def portable_config(folder: Path, model: str) -> None:
    """Name the base model as the config does (alias/hub id, not a cache path) and
    list target modules by their short names, the form vLLM's LoRA loader expects."""
    config_path = folder / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config["base_model_name_or_path"] = model
    targets = config.get("target_modules")
    if isinstance(targets, list):
        config["target_modules"] = sorted({t.rsplit(".", 1)[-1] for t in targets})
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")

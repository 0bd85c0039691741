"""Train one adapter from a buffer manifest (the rules' entry point)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from evoflow.provenance import sha256_file
from evoflow.store import Episode, load_episodes, table_to_episodes
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_data import encode_all
from evoflow.train.sft_trainer import train_sft
from evoflow.train.steps import step_groups

log = logging.getLogger(__name__)


def train_from_manifest(
    manifest: str | Path,
    model: str,
    output: str | Path,
    sft: dict,
    init_adapter: str | Path | None = None,
    loss_log: str | Path | None = None,
    threads: int = 1,
    progress: bool = True,
    budget: int | None = None,
    budget_from: str | None = None,
) -> dict:
    """LoRA SFT on every episode a manifest selects (hashes verified on read).

    ``training.json`` in the adapter folder records the manifest's sha256 and the
    counts of ``buffer_counts`` (one of them is the weight of weighted averaging).
    With ``budget`` the job takes exactly that many optimizer steps (another
    job's: ``planned_steps`` or ``budget_steps``, named by ``budget_from``),
    cycled over this job's episodes under the same schedule, whatever ``sft``
    says of steps.
    """
    from evoflow.runtime import configure_threads

    configure_threads(threads)
    extra = {}
    if budget is not None:
        if not isinstance(budget, int) or budget < 1:
            raise ValueError(f"budget must be a positive step count, got {budget!r}")
        sft = {
            **{k: v for k, v in sft.items() if k != "explored_steps"},
            "steps": budget,
        }
        extra = {"budget_from": budget_from, "budget_steps": budget}
    episodes = table_to_episodes(load_episodes(manifest))
    chats = [_chat(e) for e in episodes]
    log.info("train: %d episodes from %s", len(chats), manifest)
    metadata = {
        "buffer_manifest": str(manifest),
        "buffer_sha256": sha256_file(manifest),
        **buffer_counts(episodes),
        **extra,
    }
    return train_sft(
        chats,
        model,
        output,
        SFTConfig(**sft),
        init_adapter,
        loss_log,
        metadata,
        progress,
        explored=[e.source != "expert" for e in episodes],
    )


def _chat(episode: Episode) -> list[dict]:
    return [
        {"role": m.role, "content": m.content, "loss": m.loss} for m in episode.messages
    ]


def planned_steps(manifest: str | Path, model: str, sft: dict) -> int:
    """The optimizer steps a training job with settings ``sft`` on
    ``manifest`` takes, counted without training: they follow from its
    examples (tokenized as the job would) and the settings alone. A matched-
    budget job reads another job's steps so, and need not wait for it."""
    from transformers import AutoTokenizer

    from evoflow.policy.models import resolve_model

    config = SFTConfig(**sft)
    episodes = table_to_episodes(load_episodes(manifest))
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(model))
    pairs = [(_chat(e), e.source != "expert") for e in episodes]
    examples = encode_all(
        tokenizer, pairs, config.max_length, config.explored_thoughts
    )[0]
    steps = len(step_groups(examples, config))
    if steps < 1:
        raise ValueError(f"{manifest}: a job with these settings trains no step "
                         f"({len(episodes)} episodes, {len(examples)} trainable)")  # fmt: skip
    return steps


def buffer_counts(episodes: list[Episode]) -> dict[str, int]:
    """What a client may report about its buffer: counts, never data.

    Returns
    -------
    dict
        ``buffer_episodes`` (all), ``buffer_successes`` (successful, expert
        demonstrations included) and ``buffer_explored_successes`` (successful
        episodes the client's own exploration found: source other than
        ``expert``) — the weight of the ``fedse_weighted`` ablation.
    """
    return {
        "buffer_episodes": len(episodes),
        "buffer_successes": sum(e.success for e in episodes),
        "buffer_explored_successes": sum(
            e.success and e.source != "expert" for e in episodes
        ),
    }


def budget_steps(adapter: str | Path) -> int:
    """The optimizer steps another training job took (its ``training.json``)."""
    path = Path(adapter) / "training.json"
    try:
        steps = json.loads(path.read_text())["optimizer_steps"]
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(
            f"{path}: cannot read the job's optimizer_steps ({exc})"
        ) from None
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(
            f"{path}: optimizer_steps must be a positive integer, got {steps!r}"
        )
    return steps

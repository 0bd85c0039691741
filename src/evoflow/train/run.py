"""Train one adapter from a buffer manifest (the rules' entry point)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from evoflow.provenance import sha256_file
from evoflow.store import Episode, load_episodes, table_to_episodes
from evoflow.train.sft_config import SFTConfig
from evoflow.train.sft_trainer import train_sft

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
    budget: str | Path | None = None,
) -> dict:
    """LoRA SFT on every episode a manifest selects (hashes verified on read).

    ``training.json`` in the adapter folder records the manifest's sha256 and the
    counts of ``buffer_counts`` (one of them is the weight of weighted averaging).
    With ``budget`` (another job's adapter folder) the job takes exactly as many
    optimizer steps as that job did (``budget_steps``), cycled over this job's
    episodes under the same schedule, whatever ``sft`` says of steps.
    """
    from evoflow.runtime import configure_threads

    configure_threads(threads)
    extra = {}
    if budget is not None:
        steps = budget_steps(budget)
        sft = {
            **{k: v for k, v in sft.items() if k != "explored_steps"},
            "steps": steps,
        }
        extra = {"budget_from": str(budget), "budget_steps": steps}
    episodes = table_to_episodes(load_episodes(manifest))
    chats = [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in episodes
    ]
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

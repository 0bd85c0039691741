"""Runtime objects built from a validated config: the policy and rollout settings."""

from __future__ import annotations

import os
from typing import Any

from evoflow.policy import Policy, SamplingParams, make_policy
from evoflow.rollout.engine import RolloutSpec


def configure_threads(threads: int) -> None:
    """Use exactly ``threads`` CPU threads in torch (jobs must not oversubscribe)."""
    import torch

    torch.set_num_threads(max(1, int(threads)))


def policy_from_config(config: dict[str, Any]) -> Policy:
    """The configured model behind the configured backend."""
    model = config["model"]
    if model["backend"] == "hf":
        options = {"max_context": model["max_context"], "batch_size": model["batch_size"],
                   "dtype": model["dtype"]}  # fmt: skip
    elif model["backend"] == "vllm":
        options = {"max_context": model["max_context"], "dtype": model["dtype"],
                   "gpu_memory_utilization": model["gpu_memory_utilization"]}  # fmt: skip
    else:
        key_env = model["api_key_env"]
        options = {"max_context": model["max_context"],
                   "base_url": model["base_url"] or "http://127.0.0.1:8000",
                   "api_key": os.environ.get(key_env) if key_env else None}  # fmt: skip
    return make_policy(model["backend"], model["name"], **options)


def sampling_from_config(
    config: dict[str, Any], temperature: float | None = None
) -> SamplingParams:
    generation = config["generation"]
    return SamplingParams(
        temperature=generation["temperature"] if temperature is None else temperature,
        top_p=generation["top_p"],
        max_new_tokens=generation["max_new_tokens"],
        max_reply_bytes=generation["max_reply_bytes"],
    )


def rollout_spec(config: dict[str, Any], env: str, **labels: Any) -> RolloutSpec:
    """Rollout settings for ``env`` with the given labels (method, round, split, …)."""
    return RolloutSpec(
        experiment=config["experiment"],
        seed=config["seed"],
        horizon=config["envs"][env]["max_turns"],
        width=config["generation"]["width"],
        max_invalid=config["generation"]["max_invalid"],
        constrain_actions=config["generation"]["constrain_actions"],
        sampling=sampling_from_config(config, labels.pop("temperature", None)),
        **labels,
    )

"""Policies: turn batches of chats into replies (hf, vllm or openai-compatible)."""

from __future__ import annotations

from evoflow.policy.base import Generation, Policy, PolicyError, SamplingParams


def make_policy(backend: str, model: str, **options) -> Policy:
    """A policy of the named backend; heavy imports happen only for that backend."""
    if backend == "hf":
        from evoflow.policy.hf import HFPolicy

        return HFPolicy(model, **options)
    if backend == "vllm":
        from evoflow.policy.vllm import VLLMPolicy

        return VLLMPolicy(model, **options)
    if backend == "openai":
        from evoflow.policy.openai import OpenAIPolicy

        return OpenAIPolicy(model, **options)
    raise ValueError(f"backend {backend!r} is not hf, vllm or openai")


__all__ = ["Generation", "Policy", "PolicyError", "SamplingParams", "make_policy"]

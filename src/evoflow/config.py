"""Load and validate experiment configs against the workflow's JSON schema.

The same schema file (``workflow/schemas/config.schema.yaml``) is used by the
Snakefile at start-up and by library code, so a bad key fails before any job runs
and with the same message everywhere.
"""

from __future__ import annotations

import copy
import difflib
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from evoflow.errors import ConfigError
from evoflow.provenance import REPO_ROOT, stable_hash

SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"


@functools.cache
def load_schema(path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    """Read the config JSON schema (YAML syntax), method kinds from the registry."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"config schema not found at {path}; evoflow must run from its "
            "repository checkout (pip install -e .)"
        )
    with open(path) as fh:
        schema = yaml.safe_load(fh)
    from evoflow.methods import KINDS

    method = schema["properties"]["methods"]["additionalProperties"]
    method["properties"]["kind"]["enum"] = list(KINDS)  # the one registry
    return schema


def load_config(path: str | Path, *overlays: str | Path) -> dict[str, Any]:
    """Read a YAML config file (and ``overlays`` laid over it, each merged key
    by key as Snakemake merges ``--configfile a.yaml b.yaml``), fill defaults
    and validate the result.

    Raises
    ------
    ConfigError
        naming the file and the offending key when a file is unreadable or the
        config does not match the schema.
    """
    source = ", ".join(str(p) for p in (path, *overlays))
    return validate_config(load_raw(path, *overlays), source=source)


def load_raw(path: str | Path, *overlays: str | Path) -> Any:
    """The YAML of ``path`` with ``overlays`` merged over it, before defaults."""
    raw = read_yaml(Path(path))
    for overlay in overlays:
        raw = merged(raw, read_yaml(Path(overlay)))
    return raw


def read_yaml(path: Path) -> Any:
    try:
        with open(path) as fh:
            return yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None


def merged(base: Any, overlay: Any) -> Any:
    """``overlay`` over ``base``: mappings merge key by key, anything else is
    replaced (Snakemake's rule for several config files)."""
    if not isinstance(base, dict) or not isinstance(overlay, dict):
        return overlay
    out = dict(base)
    for key, value in overlay.items():
        out[key] = merged(base[key], value) if key in base else value
    return out


def validate_config(config: Any, source: str = "config") -> dict[str, Any]:
    """Return a copy of ``config`` with schema defaults filled in (keys sorted), or raise.

    Parameters
    ----------
    config
        the parsed config mapping.
    source
        where the config came from; it prefixes every error message.
    """
    if not isinstance(config, dict):
        raise ConfigError(f"{source}: expected a mapping of keys, got {_kind(config)}")
    schema = load_schema()
    filled = copy.deepcopy(config)
    _fill_defaults(filled, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(filled), key=lambda e: [str(p) for p in e.absolute_path]
    )
    problems = [_describe(jsonschema.exceptions.best_match([e])) for e in errors]
    if not problems:  # the checks across keys assume a config of the right shape
        for check in (_check_envs, _check_methods, _check_model):
            try:
                check(filled, problems)
            except ConfigError as exc:  # a check that cannot go on after it
                problems.append(str(exc))

    if problems:
        raise ConfigError(f"{source}: {_listed(list(dict.fromkeys(problems)))}")
    return _sorted(filled)


def check_scale(raw: dict[str, Any], filled: dict[str, Any], source: str) -> None:
    """Refuse a config on the embedded model that inherits paper-scale defaults
    (``paper_scale_inherited``) unless it sets ``allow_paper_scale``; the
    workflow and ``evoflow check-config`` call it before any job runs."""
    inherited = (
        [] if filled["allow_paper_scale"] else paper_scale_inherited(raw, filled)
    )
    if inherited:
        raise ConfigError(
            f"{source}: the embedded model {filled['model']['name']!r} would run at "
            f"the schema's paper-scale defaults of {', '.join(inherited)}; set them "
            "(config/config.yaml shows laptop-scale values) or set "
            "allow_paper_scale: true (evoflow check-config --allow-paper-scale)"
        )


def paper_scale_inherited(raw: dict[str, Any], filled: dict[str, Any]) -> list[str]:
    """Keys a config on the embedded model leaves to a paper-scale default:
    ``fed.rounds`` (20) with a federated method, ``train.max_length`` (4,096)
    with an SFT-trained one, ``envs.<env>.test`` (the whole test split) with a
    method that plays envs. Each would cost hours on a laptop CPU."""
    from evoflow.methods import KINDS
    from evoflow.methods.registry import ENVLESS
    from evoflow.policy.models import EMBEDDED

    if filled["model"]["name"] not in EMBEDDED:
        return []
    kinds = [KINDS[m.get("kind") or n] for n, m in filled["methods"].items()]
    given = lambda *path: _has(raw, path)  # noqa: E731
    keys = []
    if any(k.federated for k in kinds) and not given("fed", "rounds"):
        keys.append("fed.rounds")
    sft = ("fedse", "agentevol")  # families whose jobs read train.* (SFT)
    if any(k.trains and k.family in sft for k in kinds) and not given(
        "train", "max_length"
    ):
        keys.append("train.max_length")
    if any(k.family not in ENVLESS for k in kinds):
        keys += [
            f"envs.{e}.test" for e in filled["envs"] if not given("envs", e, "test")
        ]
    return keys


def _has(raw: Any, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(raw, dict) or key not in raw:
            return False
        raw = raw[key]
    return True


def _listed(problems: list[str]) -> str:
    """One problem as a sentence; several as a numbered list, all at once."""
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems:\n" + "\n".join(
        f"  {i}. {p}" for i, p in enumerate(problems, start=1)
    )


def _sorted(value: Any) -> Any:
    """Mappings with keys in sorted order, recursively: key order in a YAML file
    must not look like a change (Snakemake compares rule params as written)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _check_envs(config: dict[str, Any], problems: list[str]) -> None:
    """Rules across keys that a JSON schema cannot say clearly."""
    from evoflow.envs import REGISTRY, check_strata

    for name, env in config["envs"].items():
        remote = env["remote"]
        if name not in REGISTRY and remote is None:
            problems.append(
                f"key 'envs.{name}': '{name}' is not a built-in environment "
                f"({', '.join(sorted(REGISTRY))}); give 'remote' to play it on a server"
            )
            continue
        if remote is not None and remote.get("protocol", "evoflow") == "agentgym":
            split = config["evaluation"]["split"]
            if not remote.get(f"{split}_ids"):
                problems.append(
                    f"key 'envs.{name}.remote.{split}_ids': AgentGym servers "
                    f"do not list their tasks; give the {split} task ids "
                    "(evaluation.split)"
                )
        if env["strata"] and remote is None and name in REGISTRY:
            try:
                check_strata(name, env["strata"], f"key 'envs.{name}.strata'")
            except ValueError as exc:
                problems.append(str(exc))
        try:
            _check_dialect(name, env, f"key 'envs.{name}.dialect'")
        except ConfigError as exc:
            problems.append(str(exc))
        if name not in REGISTRY and env["demos"] and not env["demos_file"]:
            problems.append(
                f"key 'envs.{name}.demos': a remote environment has no expert; "
                "set demos: 0 or give demos_file (AgentTraj JSON)"
            )
        if env["demos_file"] and not Path(env["demos_file"]).is_file():
            problems.append(
                f"key 'envs.{name}.demos_file': no file at {env['demos_file']}"
            )


def _check_dialect(name: str, env: dict[str, Any], where: str) -> None:
    from evoflow.envs import DEFAULT_DIALECT, DIALECTS

    dialect = env["dialect"]
    if dialect == DEFAULT_DIALECT:
        return
    if (name, dialect) not in DIALECTS:
        spoken = sorted(e for e, d in DIALECTS if d == dialect)
        raise ConfigError(f"{where}: {dialect!r} is spoken by {', '.join(spoken)} only")
    if env["remote"] is not None:
        raise ConfigError(f"{where}: a remote environment speaks its server's words")
    if env["demos"] and not env["demos_file"]:
        raise ConfigError(
            f"{where}: the {dialect} dialect has no expert; set demos: 0 or give "
            "demos_file (AgentTraj JSON)"
        )


def _check_methods(config: dict[str, Any], problems: list[str]) -> None:
    from evoflow.methods import KINDS, methods_from_config

    unknown = False
    for name, method in config["methods"].items():
        kind = method.get("kind") or name
        if kind not in KINDS:
            unknown = True
            problems.append(
                f"key 'methods.{name}': '{name}' is not a method kind "
                f"({', '.join(KINDS)}); add 'kind: <one of them>'"
            )
    if unknown:
        return
    try:  # family settings the schema cannot judge (e.g. a filter's spelling)
        methods_from_config(config)
    except ValueError as exc:
        problems.append(str(exc))


def _check_model(config: dict[str, Any], problems: list[str]) -> None:
    """The model name must name weights, checked cheaply (nothing is loaded).

    Skipped for an openai backend when no method trains: there the name is only
    the server's name for its model.
    """
    from evoflow.methods import KINDS
    from evoflow.policy.models import name_problem

    model = config["model"]
    trains = any(
        KINDS[method.get("kind") or name].trains
        for name, method in config["methods"].items()
        if (method.get("kind") or name) in KINDS
    )
    if model["backend"] == "openai" and not trains:
        return
    problem = name_problem(model["name"])
    if problem:
        problems.append(f"key 'model.name': {model['name']!r} is {problem}")


def config_hash(config: dict[str, Any]) -> str:
    """Stable sha256 of a validated config, recorded in every artifact."""
    return stable_hash(config)


def _fill_defaults(instance: Any, schema: dict[str, Any]) -> None:
    """Insert ``default`` values of object properties, recursively, in place."""
    if not isinstance(instance, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in instance and "default" in sub:
            instance[key] = copy.deepcopy(sub["default"])
        if key in instance:
            _fill_defaults(instance[key], sub)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in instance.items():
            if key not in schema.get("properties", {}):
                _fill_defaults(value, extra)


def _describe(error: jsonschema.ValidationError) -> str:
    """One sentence naming the key, what was found and what was expected."""
    path = ".".join(str(p) for p in error.absolute_path)
    where = f"key '{path}'" if path else "top level"
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        name = f"{path}.{unknown[0]}" if path else unknown[0]
        close = difflib.get_close_matches(unknown[0], allowed, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown key '{name}'{hint}; allowed keys here: {', '.join(allowed)}"
    if error.validator == "required":
        missing = error.message.split("'")[1]
        name = f"{path}.{missing}" if path else missing
        return f"missing required key '{name}'"
    expected = _expected(schema)
    got = f"got {error.instance!r} ({_kind(error.instance)})"
    return (
        f"{where}: expected {expected}, {got}"
        if expected
        else f"{where}: {error.message}"
    )


def _expected(schema: dict[str, Any]) -> str:
    """Human wording of what a (sub)schema accepts."""
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    words = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a mapping",
        "null": "null",
    }
    if isinstance(kind, list):
        text = " or ".join(words.get(k, k) for k in kind)
    else:
        text = words.get(kind, "")
    bounds = []
    if "minimum" in schema:
        bounds.append(f">= {schema['minimum']}")
    if "exclusiveMinimum" in schema:
        bounds.append(f"> {schema['exclusiveMinimum']}")
    if "maximum" in schema:
        bounds.append(f"<= {schema['maximum']}")
    if "exclusiveMaximum" in schema:
        bounds.append(f"< {schema['exclusiveMaximum']}")
    if "minProperties" in schema:
        bounds.append(f"with at least {schema['minProperties']} key(s)")
    if "minItems" in schema:
        bounds.append(f"with at least {schema['minItems']} item(s)")
    if schema.get("uniqueItems"):
        bounds.append("without duplicates")
    if "pattern" in schema:
        bounds.append(f"matching {schema['pattern']}")
    if "minLength" in schema:
        bounds.append("that is not empty")
    if "items" in schema and isinstance(schema["items"], dict):
        inner = _expected(schema["items"])
        if inner:
            bounds.append(f"of {inner}")
    text = " ".join([text, *bounds]).strip()
    if schema.get("description") and text:
        text += f" ({schema['description']})"
    return text


def _kind(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "mapping",
        type(None): "null",
    }.get(type(value), type(value).__name__)

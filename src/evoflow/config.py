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


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file, fill defaults and validate it.

    Raises
    ------
    ConfigError
        naming the file and the offending key when the file is unreadable or
        does not match the schema.
    """
    path = Path(path)
    try:
        with open(path) as fh:
            raw = yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    return validate_config(raw, source=str(path))


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
    error = jsonschema.exceptions.best_match(validator.iter_errors(filled))
    if error is not None:
        raise ConfigError(f"{source}: {_describe(error)}")
    _check_envs(filled, source)
    _check_methods(filled, source)
    _check_model(filled, source)
    return _sorted(filled)


def _sorted(value: Any) -> Any:
    """Mappings with keys in sorted order, recursively: key order in a YAML file
    must not look like a change (Snakemake compares rule params as written)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _check_envs(config: dict[str, Any], source: str) -> None:
    """Rules across keys that a JSON schema cannot say clearly."""
    from evoflow.envs import REGISTRY

    for name, env in config["envs"].items():
        remote = env["remote"]
        if name not in REGISTRY and remote is None:
            raise ConfigError(
                f"{source}: key 'envs.{name}': '{name}' is not a built-in environment "
                f"({', '.join(sorted(REGISTRY))}); give 'remote' to play it on a server"
            )
        if remote is not None and remote.get("protocol", "evoflow") == "agentgym":
            if not remote.get("test_ids"):
                raise ConfigError(
                    f"{source}: key 'envs.{name}.remote.test_ids': AgentGym servers do "
                    "not list their tasks; give the test task ids"
                )
        _check_dialect(name, env, f"{source}: key 'envs.{name}.dialect'")
        if name not in REGISTRY and env["demos"] and not env["demos_file"]:
            raise ConfigError(
                f"{source}: key 'envs.{name}.demos': a remote environment has no expert; "
                "set demos: 0 or give demos_file (AgentTraj JSON)"
            )
        if env["demos_file"] and not Path(env["demos_file"]).is_file():
            raise ConfigError(
                f"{source}: key 'envs.{name}.demos_file': no file at {env['demos_file']}"
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


def _check_methods(config: dict[str, Any], source: str) -> None:
    from evoflow.methods import KINDS, methods_from_config

    for name, method in config["methods"].items():
        kind = method.get("kind") or name
        if kind not in KINDS:
            raise ConfigError(
                f"{source}: key 'methods.{name}': '{name}' is not a method kind "
                f"({', '.join(KINDS)}); add 'kind: <one of them>'"
            )
    try:  # family settings the schema cannot judge (e.g. a filter's spelling)
        methods_from_config(config)
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _check_model(config: dict[str, Any], source: str) -> None:
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
    )
    if model["backend"] == "openai" and not trains:
        return
    problem = name_problem(model["name"])
    if problem:
        raise ConfigError(f"{source}: key 'model.name': {model['name']!r} is {problem}")


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

"""``docs/reference/config.md`` from ``workflow/schemas/config.schema.yaml``:
every key with its path, type, default and description."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from evoflow.config import SCHEMA_PATH, load_schema
from evoflow.provenance import REPO_ROOT

# The name that stands for a key the user chooses, by the map's path.
PLACEHOLDERS = {"envs": "<env>", "methods": "<method>"}

INTRO = """\
An experiment is one YAML file, checked against the schema when the workflow
starts (and by `evoflow check-config --config FILE`, which prints it with every
default filled in); an unknown key, a wrong type or value stops everything
before any job runs, naming the key. Compute resources live in the profiles
under `workflow/profiles/`, never in experiment configs. How to write and run
one: [Your first experiment](../tutorials/your-first-experiment.md).

A key path such as `envs.<env>.demos` names the key `demos` of every
environment; `<method>` stands for a method's name under `methods`. "—" under
Default means unset: the description says what that does, or the key takes the
default of the code it configures (named in its section's description).
"""


def config_page() -> str:
    """The whole page, Markdown."""
    schema = load_schema()
    source = SCHEMA_PATH.relative_to(REPO_ROOT)
    lines = ["# Configuration reference", "",
             f"<!-- Generated from {source} by `evoflow docs-reference`; "
             "do not edit by hand. -->", "", INTRO]  # fmt: skip
    required = set(schema.get("required", ()))
    top = [(name, sub) for name, sub in schema["properties"].items()
           if not _has_keys(sub)]  # fmt: skip
    lines += ["## Top level", "", *_table((name, sub, name in required)
                                          for name, sub in top), ""]  # fmt: skip
    for name, sub in schema["properties"].items():
        if not _has_keys(sub):
            continue
        lines += [f"## `{name}`", "", _text(sub.get("description", "")), ""]
        if sub.get("default"):
            lines += [f"Default: {_default(sub)}", ""]
        lines += [*_table(_rows(sub, name)), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _has_keys(schema: dict[str, Any]) -> bool:
    """Whether a schema has keys of its own to list (properties, or a map of them)."""
    values = schema.get("additionalProperties")
    return "properties" in schema or (
        isinstance(values, dict) and "properties" in values
    )


def _rows(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict, bool]]:
    """(path, schema, required) of every key below ``path``, parents first."""
    values = schema.get("additionalProperties")
    if isinstance(values, dict) and "properties" in values:
        yield from _rows(values, f"{path}.{PLACEHOLDERS.get(path, '<name>')}")
    required = set(schema.get("required", ()))
    for name, sub in (schema.get("properties") or {}).items():
        key = f"{path}.{name}"
        yield key, sub, name in required
        yield from _rows(sub, key)


def _table(rows) -> list[str]:
    lines = ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
    for key, schema, required in rows:
        default = "required" if required else _default(schema)
        lines.append(f"| `{key}` | {_cell(type_text(schema))} | {default} | "
                     f"{_cell(_text(schema.get('description', '')))} |")  # fmt: skip
    return lines


def type_text(schema: dict[str, Any]) -> str:
    """A schema's type in words: ``integer ≥ 1``, ``one of `a`, `b```, …"""
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" if not isinstance(v, str)
                                     else f"`{v}`" for v in schema["enum"])  # fmt: skip
    kinds = schema.get("type", "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = [_kind(kind, schema) for kind in kinds]
    return " or ".join(words) + _bounds(schema)


def _kind(kind: str, schema: dict[str, Any]) -> str:
    if kind == "array":
        items = schema.get("items") or {}
        return f"list of {type_text(items)}" if items else "list"
    values = schema.get("additionalProperties")
    if kind == "object" and isinstance(values, dict) and "properties" not in values:
        return f"map of name → {type_text(values)}"
    return kind


def _bounds(schema: dict[str, Any]) -> str:
    """A schema's limits in words: `` (≥ 1)``, ``, at least 1 item``, …"""
    marks = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤",
             "exclusiveMaximum": "<", "minLength": "length ≥"}  # fmt: skip
    parts = [f"{mark} {schema[key]}" for key, mark in marks.items() if key in schema]
    if "pattern" in schema:
        pattern = schema["pattern"]  # a | would end a table cell, even in code
        parts.append(
            f"matching {pattern}" if "|" in pattern else f"matching `{pattern}`"
        )
    text = f" ({', '.join(parts)})" if parts else ""
    if "minItems" in schema:
        count = schema["minItems"]
        text += f", at least {count} item{'s' * (count != 1)}"
    if schema.get("uniqueItems"):
        text += ", no repeats"
    return text


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return "—"
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`"


def _text(text: str) -> str:
    """A description on one line, ``<`` outside code spans escaped for HTML."""
    return _outside_code(" ".join(text.split()), lambda part: part.replace("<", "&lt;"))


def _cell(text: str) -> str:
    """Text safe inside a table cell: a ``|`` outside code spans would end it
    (inside one, Python-Markdown keeps it)."""
    return _outside_code(text, lambda part: re.sub(r"(?<!\\)\|", r"\\|", part))


def _outside_code(text: str, change) -> str:
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = change(parts[i])
    return "`".join(parts)

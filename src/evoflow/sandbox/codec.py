"""Values as data across the sandbox's boundary.

A value crosses as a JSON tree in which the types JSON lacks carry a
one-key tag: ``{"tuple": [...]}``, ``{"set": [...]}``, ``{"frozenset":
[...]}``, ``{"dict": [[key, value], ...]}``, ``{"bytes": "<hex>"}``,
``{"complex": [re, im]}`` and ``{"float": "inf" | "-inf" | "nan"}``. Lists,
strings, finite floats, ints, booleans and None are JSON's own. Only those
exact built-in types are data: a subclass (an ``int`` whose ``__eq__`` says
yes to everything) or any other object is refused with ``NotData``, so
decoding builds nothing but built-in values and runs no code of the sender.

A tree is at most ``DEPTH`` levels deep and its text at most ``LIMIT``
bytes; ints have at most ``DIGITS`` decimal digits.

This file is also copied into each sandbox (the harness and the judge load
it by path), so it imports only the standard library.
"""

from __future__ import annotations

import json
import math

DEPTH = 64
LIMIT = 2**20  # bytes of one encoded value
DIGITS = 4000
TAGS = ("tuple", "set", "frozenset", "dict", "bytes", "complex", "float")
_SPECIAL = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class NotData(ValueError):
    """A value that cannot cross the boundary as data (its type, size or depth)."""


def to_tree(value: object, limit: int = LIMIT) -> object:
    """``value`` as a JSON-able tree; ``NotData`` names what is not data."""
    budget = [limit]
    return _tree(value, 0, budget)


def from_tree(tree: object) -> object:
    """The value a tree (as ``json.loads`` gives it) stands for."""
    return _value(tree, 0)


def dumps(value: object, limit: int = LIMIT) -> str:
    """``value`` as one line of text (a tree's JSON)."""
    text = json.dumps(to_tree(value, limit), separators=(",", ":"), allow_nan=False)
    if len(text) > limit:
        raise NotData(f"its encoding is over {limit} bytes")
    return text


def loads(text: str | bytes, limit: int = LIMIT) -> object:
    """The value of a line made by ``dumps``; ``NotData`` for anything else."""
    return from_tree(parse(text, limit))


def parse(text: str | bytes, limit: int = LIMIT) -> object:
    """JSON of at most ``limit`` bytes, without NaN or Infinity literals."""
    if len(text) > limit:
        raise NotData(f"over {limit} bytes")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise NotData(f"not JSON of data ({type(error).__name__})") from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _tree(value: object, depth: int, budget: list[int]) -> object:
    if depth > DEPTH:
        raise NotData(f"it is nested deeper than {DEPTH} levels")
    budget[0] -= 1
    if budget[0] < 0:
        raise NotData("it is larger than the limit")
    kind = type(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        if value.bit_length() > DIGITS * 3.3:
            raise NotData(f"an int of more than {DIGITS} digits")
        budget[0] -= value.bit_length() // 3
        return value
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if kind is str:
        budget[0] -= len(value)
        if budget[0] < 0:
            raise NotData("it is larger than the limit")
        return value
    if kind is bytes:
        budget[0] -= 2 * len(value)
        if budget[0] < 0:
            raise NotData("it is larger than the limit")
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [_tree(value.real, depth + 1, budget),
                            _tree(value.imag, depth + 1, budget)]}  # fmt: skip
    if kind is list:
        return [_tree(item, depth + 1, budget) for item in value]
    if kind in (tuple, set, frozenset):
        return {kind.__name__: [_tree(item, depth + 1, budget) for item in value]}
    if kind is dict:
        return {"dict": [[_tree(k, depth + 1, budget), _tree(v, depth + 1, budget)]
                         for k, v in value.items()]}  # fmt: skip
    raise NotData(f"a {_name(kind)} is not data")


def _name(kind: type) -> str:
    name = type.__dict__["__name__"].__get__(kind)  # never a metaclass's property
    return name if isinstance(name, str) else "object"


def _value(tree: object, depth: int) -> object:
    if depth > DEPTH:
        raise NotData(f"it is nested deeper than {DEPTH} levels")
    kind = type(tree)
    if tree is None or kind in (bool, int, float, str):
        return tree
    if kind is list:
        return [_value(item, depth + 1) for item in tree]
    if kind is not dict or len(tree) != 1:
        raise NotData("an object that is not one tag")
    ((tag, body),) = tree.items()
    try:
        return _tagged(tag, body, depth)
    except (TypeError, ValueError, OverflowError) as error:
        if isinstance(error, NotData):
            raise
        raise NotData(f"a malformed {tag!r}: {type(error).__name__}") from None


def _tagged(tag: str, body: object, depth: int) -> object:
    if tag == "float":
        if body not in _SPECIAL:
            raise NotData("a float tag other than inf, -inf or nan")
        return _SPECIAL[body]
    if tag == "bytes":
        if type(body) is not str:
            raise NotData("bytes that are not hex text")
        return bytes.fromhex(body)
    if tag not in TAGS or type(body) is not list:
        raise NotData(f"an unknown tag {str(tag)[:40]!r}")
    items = [_value(item, depth + 1) for item in body]
    if tag == "complex":
        if len(items) != 2 or not all(type(x) in (int, float) for x in items):
            raise NotData("a complex that is not two numbers")
        return complex(items[0], items[1])
    if tag == "dict":
        if not all(type(p) is list and len(p) == 2 for p in items):
            raise NotData("a dict entry that is not a pair")
        return {k: v for k, v in items}
    return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)

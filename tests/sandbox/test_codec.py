"""Values as data: built-in values cross whole, nothing else crosses."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evoflow.sandbox import codec

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
           | st.text() | st.binary() | st.complex_numbers(allow_nan=False))  # fmt: skip
HASHABLE = st.recursive(SCALARS, lambda inner: st.tuples(inner, inner) | st.frozensets(inner),
                        max_leaves=10)  # fmt: skip
VALUES = st.recursive(
    SCALARS | HASHABLE,
    lambda inner: (st.lists(inner) | st.tuples(inner, inner) | st.sets(HASHABLE)
                   | st.dictionaries(HASHABLE, inner)),
    max_leaves=20,
)  # fmt: skip


def same(a, b) -> bool:
    """Equal and of the same types all the way down."""
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@given(VALUES)
def test_built_in_values_cross_whole(value):
    assert same(codec.loads(codec.dumps(value)), value)


def test_infinities_and_nan_cross():
    back = codec.loads(codec.dumps([math.inf, -math.inf, math.nan]))
    assert back[:2] == [math.inf, -math.inf] and math.isnan(back[2])


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (type("Yes", (), {"__eq__": lambda s, o: True})(), "a Yes is not data"),
        (type("S", (str,), {})("x"), "is not data"),  # a subclass is not the type
        (int, "a type is not data"),
        (lambda: 1, "a function is not data"),
        ("x" * (codec.LIMIT + 1), "larger than the limit"),
        (10**5000, "more than 4000 digits"),
    ],
    ids=["lying eq", "str subclass", "class", "function", "huge", "long int"],
)
def test_what_is_not_data_is_refused(value, why):
    with pytest.raises(codec.NotData, match=why):
        codec.dumps(value)


def test_cycles_and_deep_nesting_are_refused():
    cycle: list = []
    cycle.append(cycle)
    deep: object = 0
    for _ in range(codec.DEPTH + 2):
        deep = [deep]
    for value in (cycle, deep):
        with pytest.raises(codec.NotData, match="deeper than"):
            codec.dumps(value)


@pytest.mark.parametrize(
    "text",
    [
        "NaN", "[Infinity]", "{}", '{"a": 1}', '{"tuple": 1}', '{"pickle": "gASV"}',
        '{"set": [[1]]}', '{"dict": [[1]]}', '{"bytes": "zz"}', '{"float": "1e999"}',
        '{"complex": ["a", 1]}', "[" * 10000 + "]" * 10000, "1" + "0" * 5000, "not json",
        '{"tuple": [], "set": []}',
    ],
)  # fmt: skip
def test_malformed_text_is_refused_as_not_data(text):
    with pytest.raises(codec.NotData):
        codec.loads(text)


def test_decoding_builds_only_built_in_types():
    text = json.dumps({"dict": [[{"tuple": [1, {"bytes": "00"}]}, {"set": [1.5]}]]})
    value = codec.loads(text)
    assert value == {(1, b"\0"): {1.5}}
    assert {type(k) for k in value} == {tuple}

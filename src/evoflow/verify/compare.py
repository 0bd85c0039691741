"""A program's output against an expectation, on the host.

Both sides are built-in values only (the output was decoded from data by
``evoflow.sandbox.codec``), so comparing them runs no code of the program.
``==`` is Python's equality with one exception, floats: wherever the
expected value or the output holds a float, the two numbers match within
``ABSOLUTE + RELATIVE * |expected|`` (EvalPlus's tolerance for float outputs:
atol 1e-6, rtol 1e-7); ints, strings, bytes and the rest compare exactly,
and containers element by element (lists and tuples in order, dicts by
key; sets exactly, as a set cannot be matched by tolerance). ``close`` is
the test's own ``abs(out - v) < t`` or ``math.isclose``.
"""

from __future__ import annotations

import math

from evoflow.sandbox.calls import Answer
from evoflow.verify.cases import WRAPS, Expectation

ABSOLUTE = 1e-6
RELATIVE = 1e-7


def holds(answer: Answer, expectation: Expectation) -> bool:
    """Whether the program's ``answer`` meets ``expectation``: it returned
    (did not raise, returned data) and the comparison is true."""
    if not answer.returned:
        return False
    try:
        out = _wrapped(answer.value, expectation)
        return _compare(out, expectation)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False  # e.g. sorted() of mixed types, abs() of a string


def _wrapped(value: object, expectation: Expectation) -> object:
    if expectation.wrap == "round":
        return round(value, expectation.digits)
    if expectation.wrap:
        return WRAPS[expectation.wrap](value)
    return value


def _compare(out: object, e: Expectation) -> bool:
    how = e.how
    if how == "==":
        return equal(out, e.expected)
    if how == "!=":
        return not equal(out, e.expected)
    if how == "is":
        return out is e.expected
    if how == "is not":
        return out is not e.expected
    if how == "truthy":
        return bool(out)
    if how == "falsy":
        return not out
    if how == "close":
        if e.relative:
            return math.isclose(
                out, e.expected, rel_tol=e.relative, abs_tol=e.tolerance
            )
        gap = abs(out - e.expected)
        return bool(gap < e.tolerance if e.strict else gap <= e.tolerance)
    raise ValueError(f"unknown comparison {how!r}")


def equal(out: object, expected: object) -> bool:
    """Python's ``==`` on built-in values, floats within the tolerance."""
    if type(out) is float or type(expected) is float:
        if type(out) in (int, float, bool) and type(expected) in (int, float, bool):
            if out == expected:
                return True  # the same number, infinities included
            return abs(out - expected) <= ABSOLUTE + RELATIVE * abs(expected)
        return bool(out == expected)
    if type(out) is type(expected) and type(out) in (list, tuple):
        return len(out) == len(expected) and all(
            equal(a, b) for a, b in zip(out, expected, strict=True)
        )
    if type(out) is dict and type(expected) is dict:
        return out.keys() == expected.keys() and all(
            equal(out[k], expected[k]) for k in expected
        )
    return bool(out == expected)

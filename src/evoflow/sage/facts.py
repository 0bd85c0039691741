"""What a SAGE problem tests, as a key: two problems with the same key teach
the same thing, however they are worded.

- Generated maths (``evoflow.sage.problems.math_problem``): the worked line
  ``solution`` ("12 - 7 = 5", "40 + 9 - 3 = 46", "18 * 5 / 3 = 30") read as
  an expression tree; the two operands of ``+`` and ``*`` are put in a fixed
  order, so "3 + 4" and "4 + 3" are one fact while "7 - 3" and "7 - 4" are two.
  The names and items of the word problem do not count.
- Generated code tasks: the function the task asks for (``sum_even``, …).
- Any other problem (HumanEval, a local benchmark, a Challenger question with
  no worked line): its normalised text (``evoflow.sage.pool.text_key``); for
  code this is the task's prompt, since HumanEval reuses function names
  (``add``, ``solve``, …) across different tasks.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable

from evoflow.sage.pool import text_key
from evoflow.sage.problems import Problem

OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
COMMUTATIVE = ("+", "*")


def fact_key(problem: Problem) -> str:
    """The key of what ``problem`` tests (see the module note)."""
    if problem.kind == "math" and problem.source == "generated" and problem.solution:
        return "math:" + expression_key(problem.solution.split("=")[0])
    if problem.kind == "code" and problem.source == "generated":
        found = re.search(r"def\s+(\w+)", problem.solution)
        if found:
            return "code:" + found.group(1)
    return f"{problem.kind}:text:{text_key(problem.question)}"


def expression_key(expression: str) -> str:
    """``expression`` (numbers and + - * /) in a canonical, bracketed form."""
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
        return _canonical(tree)
    except (SyntaxError, ValueError):
        raise ValueError(f"not an arithmetic expression: {expression!r}") from None


def _canonical(node: ast.AST) -> str:
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        op = OPERATORS[type(node.op)]
        left, right = _canonical(node.left), _canonical(node.right)
        if op in COMMUTATIVE:
            left, right = sorted((left, right))
        return f"({left}{op}{right})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"-{_canonical(node.operand)}"
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return repr(node.value)
    raise ValueError(f"unexpected part {ast.dump(node)}")


def facts(problems: Iterable[Problem]) -> set[str]:
    """The set of fact keys of ``problems``."""
    return {fact_key(p) for p in problems}


def shared(first: Iterable[Problem], second: Iterable[Problem]) -> int:
    """How many problems of ``second`` test a fact that ``first`` also tests."""
    known = facts(first)
    return sum(fact_key(p) in known for p in second)


def bucket(key: str, parts: int = 3) -> int:
    """A fixed bucket in ``range(parts)`` for a fact key (a hash, not Python's
    salted ``hash``), so a fact's split never depends on what else is drawn."""
    return hashlib.sha256(key.encode()).digest()[0] % parts

"""Code tests read by parsing (``ast``), never by running them on the host.

A test snippet (``assert f(2, 3) == 5``; HumanEval's ``def check(candidate):
...`` followed by ``check(f)``; an MBPP list of asserts) names things the
program must provide: every name it loads without defining, that is neither
a built-in, a standard module nor something the problem's ``helpers`` define
with a body (a prompt's stub of the function to write does not count). Those
are the names under test, the only ones the program is asked for.

``split`` turns a test into expectations the host can check by itself
where every statement of it is one of these, with literal inputs and
expected values (``ast.literal_eval``)::

    assert OUT == V        assert OUT != V        assert OUT is None/True/False
    assert OUT             assert not OUT
    assert abs(OUT - V) < T   (or <=, either side of the minus, math.fabs)
    assert math.isclose(OUT, V, rel_tol=R, abs_tol=A)

where ``OUT`` is ``f(literals...)`` for a name under test, maybe wrapped in
``tuple``, ``list``, ``set``, ``frozenset``, ``sorted`` or ``round(.., N)``
(the same wrappers may build ``V`` from a literal). Anything else (a loop,
an input computed from a helper, a result fed to another function) goes to
the judge (``judge_plan``), which runs the test in a sandbox of its own. A
test that names nothing of the program is refused: it would pass or fail
whatever the program does.
"""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass

from evoflow.sandbox.calls import Call

BUILTINS = frozenset(dir(builtins))
WRAPS = {"tuple": tuple, "list": list, "set": set, "frozenset": frozenset,
         "sorted": sorted}  # fmt: skip
USED = frozenset({*WRAPS, "abs", "round", "math"})  # what the host's forms assume
EQUALITIES = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}
LONGEST = 4 * 2**20  # characters of one test


class UnsplittableTest(ValueError):  # noqa: N818 - reads as what the test is
    """A test that cannot be split into inputs and expected values."""


@dataclass(frozen=True)
class Expectation:
    """One check of a program's output: ``call``'s result, put through
    ``wrap``, compared with ``expected`` by ``how`` (``==``, ``!=``, ``is``,
    ``is not``, ``truthy``, ``falsy`` or ``close``: within ``tolerance``,
    ``strict`` for ``<``; ``relative`` for ``math.isclose``)."""

    call: Call
    how: str
    expected: object = None
    wrap: str | None = None
    digits: int | None = None  # round's
    tolerance: float = 0.0
    relative: float = 0.0
    strict: bool = False


def names_under_test(test: str, helpers: str = "") -> tuple[list[str], list[str]]:
    """The names ``test`` takes from the program, and the standard modules
    it uses without importing them."""
    tree = _parse(test, "test")
    free = _loaded(tree) - _defined(tree) - BUILTINS
    modules = sorted(n for n in free if n in sys.stdlib_module_names)
    return sorted(free - set(modules) - _provided(helpers)), modules


def judge_plan(tests: list[str], helpers: str = "") -> dict:
    """What the judge needs to run ``tests`` (``evoflow.sandbox.judging``);
    ``UnsplittableTest`` for a test that names nothing of the program."""
    entries = []
    for i, test in enumerate(tests):
        names, modules = names_under_test(test, helpers)
        if not names:
            raise UnsplittableTest(
                f"test {i} ({test[:80]!r}) uses nothing of the program, so it would "
                f"pass or fail whatever the program does"
            )
        entries.append({"code": test, "names": names, "modules": modules})
    return {"helpers": helpers, "tests": entries}


def split(test: str, helpers: str = "") -> list[Expectation] | None:
    """The expectations of ``test`` where the host can check them itself;
    None where the test needs the judge."""
    if _provided(helpers) & USED:
        return None  # the helpers redefine what the host's forms assume
    try:
        tree = _parse(test, "test")
        under = set(names_under_test(test, helpers)[0])
        body, aliases = _unwrap(tree, under)
        return _expectations(body, under, aliases)
    except (UnsplittableTest, ValueError, TypeError, RecursionError, MemoryError):
        return None


def _parse(text: str, what: str) -> ast.Module:
    if len(text) > LONGEST:
        raise UnsplittableTest(f"a {what} of {len(text)} characters is over {LONGEST}")
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise UnsplittableTest(f"the {what} is not Python: {error}") from None


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}  # fmt: skip


def _defined(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere (stored, a parameter, a def, an
    import, an except or match target)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
        elif (
            isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar)
            and node.name
        ):
            found.add(node.name)
    return found


def _provided(helpers: str) -> set[str]:
    """The names ``helpers`` bind with a body: not a stub (the function to
    write, ``_stub``)."""
    if not helpers:
        return set()
    tree = _parse(helpers, "helpers")
    stubs = {node.name for node in tree.body
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _stub(node)}  # fmt: skip
    return _defined(tree) - stubs


def _stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A def that computes nothing: a docstring, ``pass``, ``...``, imports."""
    return all(isinstance(s, ast.Pass | ast.Import | ast.ImportFrom) or (
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in node.body)  # fmt: skip


def _unwrap(tree: ast.Module, under: set[str]) -> tuple[list[ast.stmt], dict[str, str]]:
    """A test's statements, and ``candidate``-style aliases of names under
    test: HumanEval's ``def check(candidate): ...`` + ``check(f)`` gives the
    body of ``check`` with ``candidate`` standing for ``f``."""
    body = [s for s in tree.body if not _inert(s)]
    if (len(body) >= 2 and isinstance(body[-2], ast.FunctionDef)
            and isinstance(body[-1], ast.Expr)):  # fmt: skip
        check, call = body[-2], body[-1].value
        params = check.args
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == check.name and len(call.args) == 1 and not call.keywords
                and isinstance(call.args[0], ast.Name) and call.args[0].id in under
                and len(params.args) == 1 and not check.decorator_list
                and not (params.vararg or params.kwarg or params.kwonlyargs
                         or params.posonlyargs or params.defaults)):  # fmt: skip
            for statement in body[:-2]:
                _literal_assignment(statement)
            return check.body, {params.args[0].arg: call.args[0].id}
    return body, {}


def _inert(statement: ast.stmt) -> bool:
    """A statement with no effect: a docstring, ``pass``, a bare built-in's name."""
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr):
        value = statement.value
        return isinstance(value, ast.Constant) or (
            isinstance(value, ast.Name) and value.id in BUILTINS
        )
    return False


def _literal_assignment(statement: ast.stmt) -> None:
    """HumanEval's ``METADATA = {...}``: a name bound to a literal."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):  # fmt: skip
        raise UnsplittableTest("a statement before check")
    ast.literal_eval(statement.value)


def _expectations(body: list[ast.stmt], under: set[str],
                  aliases: dict[str, str]) -> list[Expectation] | None:  # fmt: skip
    found = []
    for statement in body:
        if _inert(statement):
            continue
        if not isinstance(statement, ast.Assert):
            return None
        test = statement.test
        if isinstance(test, ast.Constant) and test.value:
            continue  # HumanEval's ``assert True, "..."``
        expectation = _expectation(test, under, aliases)
        if expectation is None:
            return None
        found.append(expectation)
    return found


def _expectation(test: ast.expr, under: set[str], aliases: dict) -> Expectation | None:
    out = lambda node: _output(node, under, aliases)  # noqa: E731
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        got = out(test.operand)
        return got and Expectation(got[0], "falsy", wrap=got[1], digits=got[2])
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _compare(test, out)
    if isinstance(test, ast.Call) and _named(test.func, "math", "isclose"):
        return _isclose(test, out)
    got = out(test)
    return got and Expectation(got[0], "truthy", wrap=got[1], digits=got[2])


def _compare(test: ast.Compare, out) -> Expectation | None:
    op, left, right = type(test.ops[0]), test.left, test.comparators[0]
    if op in EQUALITIES:
        for side, other in ((left, right), (right, left)):
            got = out(side)
            if got:
                value = _literal(other)
                if op in (ast.Is, ast.IsNot) and not (
                    isinstance(other, ast.Constant) and value in (None, True, False)
                ):
                    return None
                return Expectation(got[0], EQUALITIES[op], value, got[1], got[2])
        return None
    if op in (ast.Lt, ast.LtE) and isinstance(left, ast.Call) and len(left.args) == 1:
        inner = left.args[0]
        if (_named(left.func, None, "abs") or _named(left.func, "math", "fabs")) and (
            isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Sub)
        ):
            for side, other in ((inner.left, inner.right), (inner.right, inner.left)):
                got = out(side)
                if got:
                    return Expectation(got[0], "close", _literal(other), got[1], got[2],
                                       tolerance=_number(right), strict=op is ast.Lt)  # fmt: skip
    return None


def _isclose(test: ast.Call, out) -> Expectation | None:
    options = {k.arg: _number(k.value) for k in test.keywords}
    if len(test.args) != 2 or set(options) - {"rel_tol", "abs_tol"}:
        return None
    for side, other in ((test.args[0], test.args[1]), (test.args[1], test.args[0])):
        got = out(side)
        if got:
            return Expectation(got[0], "close", _literal(other), got[1], got[2],
                               tolerance=options.get("abs_tol", 0.0),
                               relative=options.get("rel_tol", 1e-9))  # fmt: skip
    return None


def _output(node: ast.expr, under: set[str], aliases: dict):
    """(call, wrap, digits) where ``node`` is a call under test, maybe wrapped."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and not node.keywords
    ):
        name = node.func.id
        if name in WRAPS and len(node.args) == 1:
            call = _call(node.args[0], under, aliases)
            return call and (call, name, None)
        if name == "round" and len(node.args) == 2:
            call, digits = _call(node.args[0], under, aliases), _literal(node.args[1])
            return call and type(digits) is int and (call, "round", digits)
    call = _call(node, under, aliases)
    return call and (call, None, None)


def _call(node: ast.expr, under: set[str], aliases: dict) -> Call | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    name = aliases.get(node.func.id, node.func.id)
    if name not in under or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    if any(k.arg is None for k in node.keywords):
        return None
    try:
        args = tuple(_literal(a) for a in node.args)
        kwargs = {k.arg: _literal(k.value) for k in node.keywords}
    except UnsplittableTest:
        return None
    return Call(name, args, kwargs)


def _literal(node: ast.expr):
    """A literal's value; a wrapper of ``WRAPS`` applied to a literal."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in WRAPS and len(node.args) == 1 and not node.keywords):  # fmt: skip
        return WRAPS[node.func.id](_literal(node.args[0]))
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise UnsplittableTest("not a literal") from None


def _number(node: ast.expr) -> float:
    value = _literal(node)
    if type(value) not in (int, float):
        raise UnsplittableTest("not a number")
    return float(value)


def _named(func: ast.expr, module: str | None, name: str) -> bool:
    if module is None:
        return isinstance(func, ast.Name) and func.id == name
    return (isinstance(func, ast.Attribute) and func.attr == name
            and isinstance(func.value, ast.Name) and func.value.id == module)  # fmt: skip

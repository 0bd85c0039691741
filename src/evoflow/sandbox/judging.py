"""The judge of a code check, loaded by the harness inside a sandbox of its
own that holds the tests and no generated code; never imported by evoflow.

Each test runs as written, in a fresh namespace with the problem's helpers
(a benchmark's own definitions) and the standard modules it names. Each
name it takes from the program stands for what the program has: a function
is a stand-in whose call sends its inputs, as data, to the host, which asks
the program's sandbox and hands back the result, decoded into built-in
values (or raises what the call raised: a built-in exception by its name,
``ProgramError`` otherwise); a value is that value. So the expected values,
and any comparison with them, stay here, and what reaches the test from the
program is data only.

A test that gives the program something that is not data (a lambda, an
object), or reads an attribute of its function, cannot be split into inputs
and outputs: it is refused, by an exception the test's own ``except
Exception`` does not catch. The verdict, one entry per test, is the last
line sent.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os

LINE = 2**20 + 4096  # longest answer line
MISSING = object()


class Refused(BaseException):  # noqa: N818 - not an Exception, so tests cannot swallow it
    """A test that cannot be split into inputs and outputs."""


class ProgramError(Exception):
    """The program's function raised an exception that is not a built-in one."""


class OutputNotData(Exception):  # noqa: N818 - reads as what happened
    """The program's function returned what is not data."""


class ProgramLost(Exception):  # noqa: N818 - reads as what happened
    """The program's sandbox stopped answering."""


class Link:
    """The judge's line to the host: requests out, answers in."""

    def __init__(self, codec, inbound: int, outbound: int) -> None:
        self.codec = codec
        self.inbound = os.fdopen(inbound, "rb")
        self.outbound = outbound
        self.count = 0
        self.refused: str | None = None

    def send(self, message: dict) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        while data:
            data = data[os.write(self.outbound, data) :]

    def ask(self, op: str, name: str, value=None) -> dict:
        self.count += 1
        self.send({"i": self.count, "op": op, "name": name, "value": value})
        line = self.inbound.readline(LINE)
        answer = json.loads(line) if line.endswith(b"\n") else {"lost": "no answer"}
        if answer.get("i") != self.count and "lost" not in answer:
            raise ProgramLost("answers out of order")
        return answer

    def refuse(self, reason: str) -> Refused:
        self.refused = self.refused or reason
        return Refused(reason)

    def call(self, name: str, args: tuple, kwargs: dict):
        try:
            tree = self.codec.to_tree([list(args), kwargs])
        except self.codec.NotData as error:
            raise self.refuse(f"an input of {name} is not data ({error})") from None
        answer = self.ask("call", name, tree)
        if "value" in answer:
            return self.codec.from_tree(answer["value"])
        if "raised" in answer:
            raise _exception(str(answer["raised"]))
        if "unfit" in answer:
            raise OutputNotData(f"{name} returned what is not data: {answer['unfit']}")
        raise ProgramLost(str(answer.get("lost", "no answer")))

    def look(self, name: str):
        answer = self.ask("look", name)
        if answer.get("raised") == "NameError":
            return MISSING
        if "value" in answer:
            return self.codec.from_tree(answer["value"])
        return Remote(name, self)


class Remote:
    """A function of the program, as the tests see it."""

    __slots__ = ("_link", "_name")

    def __init__(self, name: str, link: Link) -> None:
        self._name, self._link = name, link

    def __call__(self, *args, **kwargs):
        return self._link.call(self._name, args, kwargs)

    def __getattr__(self, attribute: str):
        raise self._link.refuse(
            f"the test reads {self._name}.{attribute}: only calls of the program's "
            f"functions can be answered from outside it"
        )

    def __repr__(self) -> str:
        return f"<the program's {self._name}>"


def _exception(name: str) -> Exception:
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            return kind()
        except TypeError:
            pass
    return ProgramError(name)


def judge(plan: dict, codec, inbound: int, outbound: int) -> None:
    """Run each test of ``plan`` (``helpers``; ``tests``: code, names taken
    from the program, standard modules), then send the verdict."""
    link = Link(codec, inbound, outbound)
    results = [_one(test, plan["helpers"], link) for test in plan["tests"]]
    link.send({"verdict": results})


def _one(test: dict, helpers: str, link: Link) -> dict:
    link.refused = None
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        if helpers:
            exec(compile(helpers, "helpers.py", "exec"), namespace)
        for module in test["modules"]:
            try:
                namespace[module] = importlib.import_module(module)
            except ImportError:
                continue
        for name in test["names"]:
            value = link.look(name)
            if value is MISSING:
                namespace.pop(name, None)
            else:
                namespace[name] = value
        exec(compile(test["code"], "test.py", "exec"), namespace)
    except BaseException as error:  # noqa: BLE001 - the test failed or was refused
        if link.refused:
            return {"passed": False, "refused": link.refused}
        return {"passed": False, "error": _describe(error)}
    if link.refused:
        return {"passed": False, "refused": link.refused}
    return {"passed": True}


def _describe(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {error}"[:300]
    except BaseException:  # noqa: BLE001 - a message that fails
        return type(error).__name__

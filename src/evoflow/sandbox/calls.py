"""Ask a sandboxed program for values: its functions called on inputs, what
they return sent back as data.

The program's sandbox gets the inputs and nothing else. What it sends back
is only what the program claims its functions return: each answer is a line
of at most ``launch.LINE`` bytes, in order, decoded on the host by
``codec`` into built-in values; a line out of order, malformed or too long
ends the answers. Two ways:

- ``call_program``: the calls are known beforehand (split from the tests on
  the host); they lie in the sandbox's inbox as a file, and the answers are
  compared on the host.
- ``judge_program``: the tests run in a second sandbox (``judging``) that
  holds the tests and no generated code; the host relays each request of the
  judge to the program and each answer back, re-encoded, so that only data
  passes between the two. The judge's verdict is the last line it sends.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

from evoflow.sandbox import codec, isolation
from evoflow.sandbox.launch import Sandbox
from evoflow.sandbox.outcome import Limits, Outcome, ended
from evoflow.sandbox.runner import END, check_files

NAME = 200  # longest name of a function asked for


@dataclass(frozen=True)
class Call:
    """One call of the program's function ``name``."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """What the program answered to one call: a ``value``, or the name of
    what it ``raised``, or why its result was ``unfit`` (not data); ``lost``
    where no answer came (a look-up of a function: ``callable``)."""

    value: object = None
    raised: str | None = None
    unfit: str | None = None
    lost: bool = False
    callable: bool = False  # a look-up found a function

    @property
    def returned(self) -> bool:
        return (
            self.raised is None
            and self.unfit is None
            and not (self.lost or self.callable)
        )


def call_program(files: dict[str, str | bytes], calls: list[Call], limits: Limits,
                 packages: tuple[str, ...] = ()) -> tuple[Outcome, list[Answer]]:  # fmt: skip
    """Run ``program.py`` of ``files``, then each of ``calls`` in its
    namespace; the run's outcome (``passed``: every call answered) and the
    answers."""
    check_files(files)
    isolation.check()
    requests = "".join(_request(i + 1, "call", c.name, [list(c.args), c.kwargs]) + "\n"
                       for i, c in enumerate(calls))  # fmt: skip
    own = {"calls.jsonl": requests}
    with Sandbox(files, limits, inbound="file", packages=packages, own=own) as box:
        lines = box.gather()
        box.wait(box.started + limits.seconds)
        box.gathered()
        how, out, err, seconds = box.finish()
    answers = [_answer(line, i + 1) for i, line in enumerate(lines[: len(calls)])]
    answers = _until_lost(answers) + [Answer(lost=True)] * (len(calls) - len(answers))
    complete = all(not a.lost for a in answers) and lines[len(calls) :] == [END]
    status, returncode = ended(how, complete, box.timed_out, err)
    return Outcome(status, 0, 0, round(seconds, 4), returncode, out, err, True), answers


def judge_program(files: dict[str, str | bytes], plan: dict, limits: Limits,
                  packages: tuple[str, ...] = ()) -> tuple[Outcome, Outcome, list | None]:  # fmt: skip
    """Run ``program.py`` of ``files`` and, in a second sandbox, the judge on
    ``plan`` (see ``judging.judge``), relaying between them; the program's
    outcome, the judge's and the judge's verdict (None where it gave none)."""
    check_files(files)
    isolation.check()
    own = {"judge.json": json.dumps(plan)}
    with (Sandbox(files, limits, inbound="pipe", packages=packages) as worker,
          Sandbox({}, limits, role="judge", inbound="pipe", own=own) as judge):  # fmt: skip
        relayed: dict = {"verdict": None, "end": False}
        relay = threading.Thread(
            target=_relay, args=(judge, worker, relayed), daemon=True
        )
        relay.start()
        deadline = min(worker.started, judge.started) + limits.seconds
        judge.wait(deadline)
        relay.join(timeout=max(0.0, deadline - time.perf_counter()))
        worker.wait(deadline)
        relay.join(timeout=10)
        outcomes = []
        for box, finished in ((worker, relayed["end"]),
                              (judge, relayed["verdict"] is not None)):  # fmt: skip
            how, out, err, seconds = box.finish()
            status, code = ended(how, finished, box.timed_out, err)
            outcomes.append(
                Outcome(status, 0, 0, round(seconds, 4), code, out, err, True)
            )
    return outcomes[0], outcomes[1], relayed["verdict"]


def _request(i: int, op: str, name: str, value) -> str:
    tree = None if value is None else codec.to_tree(value)
    return json.dumps({"i": i, "op": op, "name": name, "value": tree},
                      separators=(",", ":"))  # fmt: skip


def _answer(line: bytes, i: int) -> Answer:
    """One answer line, checked; ``lost`` for anything but a well-formed
    answer to request ``i``."""
    try:
        message = codec.parse(line, len(line))
        if type(message) is not dict or len(message) != 2:
            return Answer(lost=True)
        if type(message.get("i")) is not int or message["i"] != i:
            return Answer(lost=True)
        if "value" in message:
            return Answer(value=codec.from_tree(message["value"]))
        if "callable" in message and message["callable"] is True:
            return Answer(callable=True)
        for key in ("raised", "unfit"):
            if key in message and type(message[key]) is str:
                return Answer(**{key: message[key][:200]})
    except codec.NotData:
        pass
    return Answer(lost=True)


def _until_lost(answers: list[Answer]) -> list[Answer]:
    """Answers after the first lost one are lost too (the stream broke)."""
    for k, answer in enumerate(answers):
        if answer.lost:
            return answers[:k] + [Answer(lost=True)] * (len(answers) - k)
    return answers


def _relay(judge: Sandbox, worker: Sandbox, into: dict) -> None:
    """Pass the judge's requests to the program and its answers back, as
    data only, until the judge's verdict; then close the program's input and
    see whether it ended with its last line."""
    lost = False
    while (line := judge.read_line()) is not None:
        try:
            message = codec.parse(line, len(line))
            if "verdict" in message:
                into["verdict"] = _verdict(message["verdict"])
                break
            i, op, name = int(message["i"]), message["op"], str(message["name"])
            if op not in ("call", "look") or len(name) > NAME:
                break
            value = None if op == "look" else codec.from_tree(message["value"])
        except (codec.NotData, KeyError, TypeError, ValueError):
            break
        answer = Answer(lost=True)
        if not lost and worker.send(_request(i, op, name, value).encode() + b"\n"):
            reply = worker.read_line()
            answer = _answer(reply, i) if reply is not None else answer
        lost = lost or answer.lost
        if not judge.send(_reply(i, answer).encode() + b"\n"):
            break
    worker.close_inbound()
    into["end"] = not lost and worker.read_line() == END


def _reply(i: int, answer: Answer) -> str:
    if answer.lost:
        return json.dumps({"i": i, "lost": "the program gave no answer"})
    if answer.callable:
        return json.dumps({"i": i, "callable": True})
    if not answer.returned:
        key = "raised" if answer.raised is not None else "unfit"
        return json.dumps({"i": i, key: answer.raised or answer.unfit})
    return json.dumps({"i": i, "value": codec.to_tree(answer.value)})


def _verdict(verdict) -> list[dict]:
    """The judge's verdict: one entry per test, each ``passed`` (a bool) and
    maybe ``refused`` or ``error`` (text)."""
    if type(verdict) is not list:
        raise ValueError("a verdict is a list")
    entries = []
    for entry in verdict:
        if type(entry) is not dict or type(entry.get("passed")) is not bool:
            raise ValueError("a verdict entry has 'passed'")
        entries.append({k: (v if k == "passed" else str(v)[:300])
                        for k, v in entry.items() if k in ("passed", "refused", "error")})  # fmt: skip
    return entries

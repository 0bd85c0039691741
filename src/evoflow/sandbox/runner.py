"""Run an untrusted program (a generated project) in a sandbox.

Each run gets its own temporary folder on the host (removed afterwards) for
its inputs and its stdout / stderr, and runs inside the OS boundary of
``evoflow.sandbox.isolation`` (bubblewrap: its own user, pid, network and ipc
namespaces, a read-only view of ``/usr``, the interpreter and the packages
the run declares, a size-capped writable folder, a process cap). Within the
boundary, ``evoflow.sandbox.harness`` lowers CPU-time, address-space,
file-size, open-file and process limits and runs the program in a worker
process under an audit hook; the host kills the whole sandbox at the
wall-clock limit.

A run that ends with the worker's last line and exit 0 is ``passed``: it ran
to its end. That says nothing about what it computed: whoever needs a score
computes it on the host from what the run left (Helmsman's predictions) or
from what the program returned (``evoflow.sandbox.calls``).
"""

from __future__ import annotations

from evoflow.sandbox import isolation
from evoflow.sandbox.launch import RESERVED, Sandbox
from evoflow.sandbox.outcome import Limits, Outcome, ended

END = b'{"end":true}\n'  # the worker's last line


def run_python(program: str, limits: Limits | None = None,
               packages: tuple[str, ...] = ()) -> Outcome:  # fmt: skip
    """Run ``program`` in a fresh sandbox that shows the standard library and
    the declared ``packages``."""
    outcome, _ = run_files({"program.py": program}, limits, packages=packages)
    return outcome


def run_files(files: dict[str, str | bytes], limits: Limits | None = None,
              collect: tuple[str, ...] = (),
              packages: tuple[str, ...] = ()) -> tuple[Outcome, dict[str, bytes]]:  # fmt: skip
    """Run ``program.py`` of a project (``files``: relative path → content;
    its folder is on ``sys.path``, so it may import its other modules) in a
    fresh sandbox that shows the standard library and the declared
    ``packages`` (with what they require), and read back the files named in
    ``collect`` that the run left (``stdout`` and ``stderr`` are the whole
    outputs)."""
    limits = limits or Limits()
    check_files(files)
    isolation.check()
    wanted = tuple(n for n in collect if n not in ("stdout", "stderr"))
    with Sandbox(files, limits, collect=wanted, packages=packages) as box:
        lines = box.gather()
        box.wait(box.started + limits.seconds)
        box.gathered()
        finished = bool(lines) and lines[-1] == END
        how, out, err, seconds = box.finish()
        kept = {n: box.whole(n) for n in collect if n in ("stdout", "stderr")}
        kept.update({n: d for n, d in box.sent["files"].items() if n in wanted})
        status, returncode = ended(how, finished, box.timed_out, err)
    outcome = Outcome(status, 0, 0, round(seconds, 4), returncode, out, err, True)
    return outcome, kept


def check_files(files: dict[str, str | bytes]) -> None:
    """A project needs a ``program.py`` and none of the harness's names."""
    if "program.py" not in files:
        raise ValueError(f"a sandboxed project needs a program.py, got {sorted(files)}")
    taken = sorted(set(files) & set(RESERVED))
    if taken:
        raise ValueError(f"sandbox file names {taken} are the harness's own")

"""The inside of a sandboxed run: ``python -I /sandbox/in/harness.py
/sandbox/in/run.json``, started by ``evoflow.sandbox.runner`` within the OS
boundary of ``evoflow.sandbox.isolation`` and never imported by evoflow.

Two processes share the work. The keeper (this process) is init of the run's
pid namespace and cannot be traced by anything else there. It lowers the
resource limits, copies the project into the working folder and forks the
worker. When the worker has ended, the keeper kills every other process left
in the sandbox, then sends the host the files it asked for and last how the
worker ended (``exit:N`` or ``signal:N``). The keeper runs no untrusted code
and alone holds that channel.

The worker plays the run's role:

- ``program``: run ``program.py``; then, where the run has calls, answer
  each: look the function up in the program's namespace, call it with the
  decoded inputs, and write back the result as data (``codec``) or the name
  of what it raised. Last it writes ``{"end": true}``.
- ``judge``: run the tests (``judging.py``); it never holds generated code.

The worker holds nothing the program could use to be counted as passing: it
knows the inputs of its calls and no expected value, and what it writes is
only what the program claims to return, compared outside. So the program may
replace anything in the worker. The audit hook is defence in depth behind the
OS boundary: no files outside the folder (the interpreter's installation may
be read), no sockets, no new processes, no signals, no calls through
``ctypes``.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import os
import resource
import shutil
import signal
import stat
import sys

INBOX = "/sandbox/in"
SITE = "/sandbox/site"
OWN = ("harness.py", "run.json", "codec.py", "judging.py", "calls.jsonl", "judge.json")
BLOCKED = (
    "socket.", "subprocess.", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec",
    "os.spawn", "os.system", "os.kill", "os.killpg", "os.startfile", "pty.",
    "ctypes.dlsym", "ctypes.call_function", "ctypes.cdata", "ctypes.string_at",
    "ctypes.wstring_at", "_posixsubprocess.", "os.chroot", "os.setuid",
    "signal.pthread_kill",
)  # fmt: skip
LOOK_EVENTS = ("os.listdir", "os.scandir", "os.chdir")  # imports list sys.path
CHANGE_EVENTS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink",
                 "os.link", "os.chmod", "os.chown", "os.truncate", "os.utime",
                 "shutil.")  # fmt: skip
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
LINE = 2**20 + 4096  # longest request line


def main(config_path: str) -> None:
    if os.getpid() != 1:  # bwrap --as-pid-1: the keeper is init of the run's namespace
        sys.exit("the sandbox harness runs only as init of its own pid namespace")
    _undumpable()  # before the fork: nothing the program starts may ptrace the keeper
    with open(config_path) as handle:
        config = json.load(handle)
    _lower_limits(config["limits"])
    if config["role"] == "program":
        shutil.copytree(INBOX, ".", dirs_exist_ok=True, ignore=lambda _, names: OWN)
    channel = config["channel_fd"]
    worker = os.fork()
    if worker == 0:
        os.close(channel)  # only the keeper can write to the host's channel
        _work(config)
    for fd in config["worker_fds"]:
        os.close(fd)  # the worker's alone: the host sees their end when it ends
    how = _ended(os.waitpid(worker, 0)[1])
    try:
        os.kill(-1, signal.SIGKILL)  # every process here but init, the keeper
    except ProcessLookupError:
        pass  # none was left
    _send(channel, config["collect"], {"how": how})


def _lower_limits(limits: dict) -> None:
    for name, value in limits.items():  # hard limits: no way back up
        resource.setrlimit(getattr(resource, name), (value, value))


def _undumpable() -> None:
    """Keep the keeper (its memory, its channel to the host) from ``ptrace``
    and ``pidfd_getfd`` by any process the program starts."""
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal:{os.WTERMSIG(status)}"
    return f"exit:{os.waitstatus_to_exitcode(status)}"


def _send(fd: int, names: list, verdict: dict) -> None:
    """To the host: each file ``names`` lists that the run left, as a JSON
    header line and its bytes (links, folders and pipes are not sent), then
    the verdict's header line."""
    with os.fdopen(fd, "wb") as channel:
        for name in names:
            try:
                handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            with os.fdopen(handle, "rb") as source:
                if not stat.S_ISREG(os.fstat(handle).st_mode):
                    continue
                data = source.read()
            channel.write(
                json.dumps({"name": name, "size": len(data)}).encode() + b"\n"
            )
            channel.write(data)
        channel.write(json.dumps({"verdict": verdict}).encode() + b"\n")


def _load(name: str):
    """A module of the harness (``codec``, ``judging``) from the inbox."""
    spec = importlib.util.spec_from_file_location(
        f"_sandbox_{name}", f"{INBOX}/{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _work(config: dict) -> None:
    """The worker: play the run's role, then end with exit 0 (or 1 where the
    program raised)."""
    codec = _load("codec")
    answers = config["outbound_fd"]
    home = os.path.realpath(".")
    sys.argv = ["program.py"]
    sys.path[:0] = [home, SITE]  # a project's modules import each other
    if config["role"] == "judge":
        judging = _load("judging")
        with open(f"{INBOX}/judge.json") as handle:
            plan = json.load(handle)
        sys.addaudithook(_hook(home, _readable()))
        judging.judge(plan, codec, config["inbound"], answers)
        os._exit(0)
    requests = config["inbound"]  # a file of calls, a pipe from the host, or None
    if isinstance(requests, str):
        requests = os.open(requests, os.O_RDONLY)
    sys.addaudithook(_hook(home, _readable()))
    namespace = {"__name__": "__main__", "__file__": "program.py",
                 "__builtins__": builtins}  # fmt: skip
    exit_, write = os._exit, _writer(answers)
    try:
        with open("program.py") as handle:
            exec(compile(handle.read(), "program.py", "exec"), namespace)
    except BaseException as error:  # noqa: BLE001 - the program ended the run early
        sys.__excepthook__(type(error), error, error.__traceback__)
        _flush()
        exit_(1)
    if requests is not None:
        _serve(namespace, os.fdopen(requests, "rb"), write, codec)
    _flush()
    write({"end": True})
    exit_(0)


def _serve(namespace: dict, requests, write, codec) -> None:
    """Answer each request line (``{"i", "op": "call" | "look", "name",
    "value"}``) until the requests end."""
    while line := requests.readline(LINE):
        request = json.loads(line)
        i, name = request["i"], request["name"]
        if name not in namespace:
            write({"i": i, "raised": "NameError"})
            continue
        target = namespace[name]
        if request["op"] == "look" and callable(target):
            write({"i": i, "callable": True})
            continue
        if request["op"] == "call":
            try:
                args, kwargs = codec.from_tree(request["value"])
                target = target(*args, **kwargs)
            except BaseException as error:  # noqa: BLE001 - what the call raised
                write({"i": i, "raised": _kind(error)})
                continue
        try:
            write({"i": i, "value": codec.to_tree(target)})
        except codec.NotData as error:
            write({"i": i, "unfit": str(error)})


def _kind(error: BaseException) -> str:
    try:
        return str(type(error).__name__)[:80]
    except BaseException:  # noqa: BLE001 - a class whose name fails
        return "Exception"


def _writer(fd: int):
    def write(message: dict) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        while data:
            data = data[os.write(fd, data) :]

    return write


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed stream loses only its output
            pass


def _readable() -> tuple:
    return tuple(
        {
            os.path.realpath(p)
            for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, SITE)
        }
    )


def _hook(home: str, readable: tuple):
    def inside(path, roots) -> bool:
        real = os.path.realpath(os.fsdecode(path))
        return any(real == r or real.startswith(r + os.sep) for r in roots)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, _, flags = args
            if isinstance(path, int) or path is None:
                return
            write = bool((flags or 0) & WRITE_FLAGS)
            if inside(path, (home,)) or (not write and inside(path, readable)):
                return
            raise PermissionError(f"sandbox: no access to {os.fsdecode(path)}")
        if event.startswith(BLOCKED):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event.startswith(LOOK_EVENTS + CHANGE_EVENTS):
            roots = (home,) if event.startswith(CHANGE_EVENTS) else (home, *readable)
            paths = [a for a in args if isinstance(a, str | bytes)]
            if not all(inside(p, roots) for p in paths):
                raise PermissionError(f"sandbox: {event} outside the sandbox")

    return hook


if __name__ == "__main__":
    main(sys.argv[1])

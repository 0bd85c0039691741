"""The inside of a sandboxed run: ``python -I /sandbox/in/harness.py
/sandbox/in/run.json``, started by ``evoflow.sandbox.runner`` within the OS
boundary of ``evoflow.sandbox.isolation`` and never imported by evoflow.

Two processes share the work. The keeper (this process) is init of the run's
pid namespace and cannot be traced by anything else there. It lowers the
resource limits, copies the project into the working folder, and forks the
worker, which runs ``program.py`` and then each test snippet. The keeper never
runs untrusted code and alone holds the channel to the host (an inherited pipe
the worker closes before anything runs). When the worker has ended, the
keeper kills every other process left in the sandbox. It then sends the files
the host asked for, and last the verdict: how the worker ended (``exit:N`` or
``signal:N``) and the tests passed. That count is -1 unless the worker reported
with the keeper's per-run secret, which it does only after every test ran.

The worker binds everything it relies on (``compile``, ``exec``,
``os.write``, ``os._exit``, the builtins) before the program runs, so a
program that replaces them changes nothing the count depends on. Each test
runs in a copy of the program's namespace. That copy has the builtins as they
were before the program ran, and leaves out any name the program defined over
a builtin. The audit hook is defence in depth behind the OS boundary: no files
outside the folder (the interpreter's installation may be read), no sockets,
no new processes, no signals, no calls through ``ctypes``, no ``gc``, tracing
or generator frames. The secret lives in the worker, so a program that walks
the interpreter's frames back into the worker (``sys._getframe``,
``tb_frame.f_back``: left open, as logging and ``namedtuple`` need them) can
still report a count it did not earn. Only the verdict's channel is out of its
reach.
"""

import builtins
import json
import os
import resource
import secrets
import shutil
import signal
import stat
import sys

INBOX = "/sandbox/in"
OWN = ("harness.py", "run.json")
BLOCKED = (
    "socket.", "subprocess.", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec",
    "os.spawn", "os.system", "os.kill", "os.killpg", "os.startfile", "pty.",
    "ctypes.dlsym", "ctypes.call_function", "ctypes.cdata", "ctypes.string_at",
    "ctypes.wstring_at", "_posixsubprocess.", "os.chroot", "os.setuid", "gc.",
    "sys._current_frames", "sys._current_exceptions", "sys.settrace", "sys.setprofile",
    "signal.pthread_kill",
)  # fmt: skip
HIDDEN = ("gi_frame", "cr_frame", "ag_frame")  # a suspended frame's locals
LOOK_EVENTS = ("os.listdir", "os.scandir", "os.chdir")  # imports list sys.path
CHANGE_EVENTS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink",
                 "os.link", "os.chmod", "os.chown", "os.truncate", "os.utime",
                 "shutil.")  # fmt: skip
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def main(config_path: str) -> None:
    if os.getpid() != 1:  # bwrap --as-pid-1: the keeper is init of the run's namespace
        sys.exit("the sandbox harness runs only as init of its own pid namespace")
    _undumpable()  # before the fork: nothing the program starts may ptrace the keeper
    with open(config_path) as handle:
        config = json.load(handle)
    _lower_limits(config["limits"])
    shutil.copytree(INBOX, ".", dirs_exist_ok=True, ignore=lambda _, names: OWN)
    secret, channel = secrets.token_hex(16), config["collect_fd"]
    report_r, report_w = os.pipe()
    worker = os.fork()
    if worker == 0:
        os.close(report_r)
        os.close(channel)  # only the keeper can write to the host
        _work(report_w, secret)
    os.close(report_w)
    how = _ended(os.waitpid(worker, 0)[1])
    try:
        os.kill(-1, signal.SIGKILL)  # every process here but init, the keeper
    except ProcessLookupError:
        pass  # none was left
    report = os.read(report_r, 256).decode(errors="replace").split()
    total = int(config["tests"])
    honest = len(report) == 3 and report[0] == secret and report[2] == str(total)
    passed = int(report[1]) if honest and report[1].isdigit() else -1
    _send(channel, config["collect"], {"how": how, "passed": passed, "total": total})


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


def _work(report: int, secret: str) -> None:
    """The worker: run the program, then each test; report only at the end."""
    exec_, compile_, write, exit_, type_ = exec, compile, os.write, os._exit, type
    enumerate_, dict_, len_ = enumerate, dict, len
    failure, excepthook = Exception, sys.__excepthook__
    flushes = (sys.stdout.flush, sys.stderr.flush)
    pristine = dict(vars(builtins))
    with open("program.py") as handle:
        program = handle.read()
    tests = []
    if os.path.exists("tests.json"):
        with open("tests.json") as handle:
            tests = json.load(handle)
    sys.argv = ["program.py"]
    sys.path.insert(0, os.path.realpath("."))  # a project's modules import each other
    sys.addaudithook(_hook(os.path.realpath("."), _readable()))
    namespace = {
        "__name__": "__main__",
        "__file__": "program.py",
        "__builtins__": builtins,
    }
    try:
        exec_(compile_(program, "program.py", "exec"), namespace)
        passed = 0
        for i, test in enumerate_(tests):
            scope = {k: v for k, v in namespace.items() if k not in pristine}
            scope["__builtins__"] = dict_(pristine)
            try:
                exec_(compile_(test, f"test_{i}.py", "exec"), scope)
                passed += 1
            except failure as error:
                write(2, f"test {i}: {_describe(error, type_)}\n".encode())
    except BaseException as error:  # noqa: BLE001 - the program ended the run early
        excepthook(type_(error), error, error.__traceback__)
        _flush(flushes)
        exit_(1)
    _flush(flushes)
    write(report, f"{secret} {passed} {len_(tests)}\n".encode())
    exit_(0)


def _describe(error: BaseException, type_) -> str:
    try:
        return f"{type_(error).__name__}: {error}"
    except BaseException:  # noqa: BLE001 - an exception whose message fails
        return type_(error).__name__


def _flush(flushes) -> None:
    for flush in flushes:
        try:
            flush()
        except BaseException:  # noqa: BLE001, S110 - a closed stream loses only its output
            pass


def _readable() -> tuple:
    return tuple(
        {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
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
        if event == "object.__getattr__" and args[1] in HIDDEN:
            raise PermissionError(f"sandbox: reading {args[1]} is not allowed")
        if event.startswith(LOOK_EVENTS + CHANGE_EVENTS):
            roots = (home,) if event.startswith(CHANGE_EVENTS) else (home, *readable)
            paths = [a for a in args if isinstance(a, str | bytes)]
            if not all(inside(p, roots) for p in paths):
                raise PermissionError(f"sandbox: {event} outside the sandbox")

    return hook


if __name__ == "__main__":
    main(sys.argv[1])

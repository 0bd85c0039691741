"""The child side of the sandbox: runs as ``python -I harness.py`` in the
private directory, never imported by evoflow itself.

It lowers its own resource limits (CPU time, address space, file size, open
files; given as arguments), reads a one-time token from stdin, then installs an audit hook (PEP 578;
it cannot be removed once added) that refuses, with ``PermissionError``:
opening or listing a path outside the private directory (reading Python's own
installation excepted), sockets, new processes (fork, exec, spawn, system,
subprocess), signals to other processes and calls through ``ctypes``. Then it runs
``program.py``, and, when ``tests.json`` is there, each test snippet in the
program's namespace, counting the ones that finish. Only when everything ran
to its end does it print the token (with the counts) as its last line — a
program that exits early, by ``sys.exit`` or ``os._exit`` or a crash, never
shows it, and the program is not given it (code written to dig it out of the
harness's memory could; the token stops accidents and naive cheats, the audit
hook and the process limits stop the rest).
"""

import json
import os
import resource
import sys

BLOCKED = (
    "socket.",
    "subprocess.",
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.exec",
    "os.spawn",
    "os.system",
    "os.kill",
    "os.killpg",
    "os.startfile",
    "pty.",
    "ctypes.dlsym",  # loading a library is allowed (importing ctypes does); calling
    "ctypes.call_function",  # into one, or poking memory, is not
    "ctypes.cdata",
    "_posixsubprocess.",
    "os.chroot",
    "os.setuid",
    "gc.get_",
    "sys._current_frames",
)
LOOK_EVENTS = ("os.listdir", "os.scandir", "os.chdir")  # imports list sys.path
CHANGE_EVENTS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink",
                 "os.link", "os.chmod", "os.chown", "os.truncate", "os.utime",
                 "shutil.")  # fmt: skip
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def main(cpu_seconds: int, memory: int, file_size: int) -> None:
    for limit, value in ((resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_AS, memory),
                         (resource.RLIMIT_FSIZE, file_size), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_NOFILE, 64)):  # fmt: skip
        resource.setrlimit(limit, (value, value))  # hard limits: no way back up
    token = sys.stdin.readline().strip()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the program reads nothing
    home = os.path.realpath(os.getcwd())
    sys.path.insert(0, home)  # a project's modules import each other
    readable = tuple(
        {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    )
    tests = _tests()
    program = open("program.py").read()  # noqa: SIM115
    sys.addaudithook(_hook(home, readable))
    namespace = {"__name__": "__main__", "__file__": "program.py"}
    exec(compile(program, "program.py", "exec"), namespace)
    passed = 0
    for i, test in enumerate(tests):
        try:
            exec(compile(test, f"test_{i}.py", "exec"), namespace)
            passed += 1
        except Exception as error:  # noqa: BLE001 - a failing test, counted
            sys.stderr.write(f"test {i}: {type(error).__name__}: {error}\n")
    sys.stdout.flush()
    os.write(1, f"\n{token} {passed} {len(tests)}\n".encode())


def _tests() -> list[str]:
    if not os.path.exists("tests.json"):
        return []
    with open("tests.json") as handle:
        return json.load(handle)


def _hook(home: str, readable: tuple[str, ...]):
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
    main(*(int(a) for a in sys.argv[1:4]))

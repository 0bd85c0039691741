"""The OS boundary of a sandboxed run: bubblewrap namespaces and a process cap.

``command`` builds the ``bwrap`` invocation: new user, pid, network, ipc, uts
and cgroup namespaces, every capability dropped, no nested user namespaces,
a new session, and death with its parent. Inside, the file system is only
``/usr`` and the interpreter's installation (read-only), the run's inputs
(read-only, at ``/sandbox/in``), a size-capped private ``/tmp`` and working
directory (``/sandbox/work``, where the program writes), and a minimal
``/dev`` (read-only, but for a size-capped ``/dev/shm``). No ``/proc`` and no
``/sys`` are mounted, so nothing of the host's processes is visible. The
environment is cleared. The harness runs as init of the pid namespace
(``--as-pid-1``): no bwrap process inside holds the run's file descriptors.

``process_cap`` bounds the number of processes and threads. A caller that is
not root gets ``RLIMIT_NPROC``, set by the harness; Linux (5.14 and later)
counts it per user namespace. Linux exempts root from ``RLIMIT_NPROC``, so a
root caller gets a child cgroup with ``pids.max`` instead. That needs the
cgroup v1 pids controller, or a v2 cgroup of its own with ``pids`` enabled for
children.

Where either cannot start, the run is refused with ``SandboxUnavailable``.
There is no fallback to weaker isolation.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

INBOX = "/sandbox/in"  # the run's inputs, read-only
WORKDIR = "/sandbox/work"  # the program's only writable folder (with /tmp)
SETUP = "scripts/setup/bubblewrap.sh"
# Packages a program could score itself with, hidden under an empty folder:
# ours (every task generator and its seeds) and scikit-learn (its bundled data
# sets, the source of Helmsman's digits rows)
HIDDEN = ("evoflow", "sklearn")


class SandboxUnavailable(RuntimeError):
    """The OS isolation could not start, so nothing was run."""


def command(inbox: Path, disk_bytes: int) -> list[str]:
    """The ``bwrap`` prefix that runs a command inside the boundary, with
    ``inbox`` read-only at ``INBOX`` and ``disk_bytes`` of writable space in
    each of ``WORKDIR``, ``/tmp`` and ``/dev/shm``."""
    args = [_bwrap(), "--unshare-all", "--unshare-user", "--disable-userns",
            "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL", "--as-pid-1",
            "--die-with-parent", "--new-session", "--clearenv",
            "--hostname", "sandbox"]  # fmt: skip
    args += _system_mounts()
    for prefix in _interpreter_roots():
        args += ["--ro-bind", prefix, prefix]
    for folder in _hidden_folders():
        args += ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]
    args += ["--ro-bind", str(inbox), INBOX, "--dev", "/dev"]
    for folder in (WORKDIR, "/tmp", "/dev/shm"):
        args += ["--size", str(disk_bytes), "--tmpfs", folder]
    args += ["--remount-ro", "/dev"]
    env = {"PATH": "/usr/bin:/bin", "HOME": WORKDIR, "TMPDIR": "/tmp",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}  # fmt: skip
    for name, value in env.items():
        args += ["--setenv", name, value]
    return [*args, "--chdir", WORKDIR, "--"]


def _system_mounts() -> list[str]:
    """``/usr`` read-only; ``/bin``, ``/lib``... as on the host (links into
    ``/usr`` on merged-usr systems, read-only folders elsewhere)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


def _interpreter_roots() -> list[str]:
    """The folders this interpreter runs from (a virtual environment and its
    base installation, each as named and as resolved), outermost first, none
    inside ``/usr``."""
    named = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(sys.executable)))  # fmt: skip
    roots = {os.path.abspath(p) for p in named} | {os.path.realpath(p) for p in named}
    kept = [r for r in sorted(roots) if not r.startswith("/usr/") and r != "/usr"]
    return [
        r for r in kept if not any(r.startswith(o + os.sep) for o in kept if o != r)
    ]


@functools.cache
def _hidden_folders() -> tuple[str, ...]:
    """The folders of the ``HIDDEN`` packages that lie inside a bound root
    (an editable install outside the environment is not bound at all)."""
    roots = _interpreter_roots()
    found = set()
    for name in HIDDEN:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in (os.path.abspath(folder), os.path.realpath(folder)):
                if any(path == r or path.startswith(r + os.sep) for r in roots):
                    found.add(path)
    return tuple(sorted(found))


@functools.cache
def _bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            f"the sandbox needs bubblewrap (bwrap), which is not installed: run "
            f"`bash {SETUP}` (Debian's bubblewrap); generated code is never run without it"
        )
    return found


@functools.cache
def check() -> None:
    """Start this interpreter in an empty sandbox once per process; raise
    ``SandboxUnavailable`` naming why, where it cannot start."""
    probe = [*command(Path("/usr"), 2**20), sys.executable, "-I", "-c", "pass"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailable(f"bubblewrap could not start: {error}") from error
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        raise SandboxUnavailable(
            f"bubblewrap could not create the sandbox's namespaces ({why}); this "
            f"kernel or container must allow user namespaces"
        )


@contextlib.contextmanager
def process_cap(count: int) -> Iterator[list[str]]:
    """A command prefix that puts the run under a cap of ``count`` processes
    (threads included); empty where the harness's ``RLIMIT_NPROC`` holds (a
    caller that is not root)."""
    if os.geteuid() != 0:
        yield []
        return
    group = _new_pids_group(count)
    try:
        yield [
            "/bin/sh",
            "-c",
            'echo $$ > "$0" && exec "$@"',
            str(group / "cgroup.procs"),
        ]
    finally:
        _remove_group(group)


def _new_pids_group(count: int) -> Path:
    base = _pids_hierarchy()
    group = base / f"evoflow-sandbox-{secrets.token_hex(6)}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(f"{count}\n")
    except OSError as error:
        raise SandboxUnavailable(
            f"as root the sandbox caps processes with a pids cgroup, and {base} refused "
            f"one ({error}); run as an ordinary user (RLIMIT_NPROC) or allow cgroups"
        ) from error
    return group


def _pids_hierarchy() -> Path:
    """This process's cgroup in the pids controller (v1) or the unified
    hierarchy (v2, where ``pids`` is enabled for children)."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        own[controllers] = path.lstrip("/")
    for controllers, path in own.items():
        if "pids" in controllers.split(","):
            folder = Path("/sys/fs/cgroup/pids") / path
            if folder.is_dir():
                return folder
    unified = Path("/sys/fs/cgroup") / own.get("", "")
    control = unified / "cgroup.subtree_control"
    if control.is_file() and "pids" in control.read_text().split():
        return unified
    raise SandboxUnavailable(
        "as root the sandbox caps processes with a pids cgroup, and this machine has no "
        "pids controller this process may use; run as an ordinary user (RLIMIT_NPROC)"
    )


def _remove_group(group: Path) -> None:
    """Kill whatever is left in the group, then remove it."""
    procs = group / "cgroup.procs"
    for _ in range(100):
        with contextlib.suppress(OSError):
            pids = [int(p) for p in procs.read_text().split()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        group.rmdir()

"""The OS boundary of a sandboxed run: bubblewrap namespaces and a process cap.

``command`` builds the ``bwrap`` invocation: new user, pid, network, ipc, uts
and cgroup namespaces, every capability dropped, no nested user namespaces,
a new session, and death with its parent. Inside, the file system is built
from an allow-list (``evoflow.sandbox.allow``), at paths of its own that do
not depend on where evoflow is installed:

- ``/usr`` read-only, with every Python package folder in it shown empty,
  and ``/bin``, ``/lib``... as on the host;
- the interpreter at ``/sandbox/python``: its executable, its shared
  library and its standard library (without ``site-packages``);
- the packages the run declares, and what they require, at ``/sandbox/site``;
- the run's inputs read-only at ``/sandbox/in``;
- a size-capped private ``/tmp``, working folder (``/sandbox/work``) and
  ``/dev/shm``, the only writable places: ``/`` itself is read-only.

No ``/proc`` and no ``/sys`` are mounted, so nothing of the host's processes
is visible. The environment is cleared. The harness runs as init of the pid
namespace (``--as-pid-1``): no bwrap process inside holds the run's file
descriptors. Nothing of the host's checkout, virtual environment or
``/tmp`` is at its host path, so a checkout under ``/tmp`` or on a path
with spaces starts like any other.

``process_cap`` bounds the number of processes and threads. A caller that is
not root gets ``RLIMIT_NPROC``, set by the harness; Linux (5.14 and later)
counts it per user namespace. Linux exempts root from ``RLIMIT_NPROC``, so a
root caller gets a child cgroup with ``pids.max`` instead. That needs the
cgroup v1 pids controller, or a v2 cgroup of its own with ``pids`` enabled for
children.

Where either cannot start, the run is refused with ``SandboxUnavailable``,
naming the step that failed. There is no fallback to weaker isolation.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

from evoflow.sandbox import allow

INBOX = "/sandbox/in"  # the run's inputs, read-only
WORKDIR = "/sandbox/work"  # the program's only writable folder (with /tmp)
PYTHON = allow.PYTHON
INTERPRETER = f"{PYTHON}/bin/python3"
SETUP = "scripts/setup/bubblewrap.sh"
# bwrap's own messages, by the step that failed
NAMESPACE_ERRORS = ("namespace", "uid map", "gid map", "setgroups", "unshare",
                    "No permissions to creat", "clone")  # fmt: skip
MOUNT_ERRORS = ("mount", "Can't create", "Can't mkdir", "Can't find source path",
                "Can't open", "Can't make", "pivot_root", "Can't chdir")  # fmt: skip


class SandboxUnavailable(RuntimeError):
    """The OS isolation could not start, so nothing was run."""


def command(inbox: Path, disk_bytes: int, packages: tuple[str, ...] = ()) -> list[str]:
    """The ``bwrap`` prefix that runs a command inside the boundary, with
    ``inbox`` read-only at ``INBOX``, the declared ``packages`` readable and
    ``disk_bytes`` of writable space in each of ``WORKDIR``, ``/tmp`` and
    ``/dev/shm``; the command to run is ``INTERPRETER`` and its arguments."""
    args = [_bwrap(), "--unshare-all", "--unshare-user", "--disable-userns",
            "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL", "--as-pid-1",
            "--die-with-parent", "--new-session", "--clearenv",
            "--hostname", "sandbox"]  # fmt: skip
    args += _system_mounts()
    args += _interpreter_mounts()
    for host, inside in allow.package_binds(tuple(sorted(packages))):
        args += ["--ro-bind", host, inside]
    args += ["--ro-bind", str(inbox), INBOX, "--dev", "/dev"]
    for folder in (WORKDIR, "/tmp", "/dev/shm"):
        args += ["--size", str(disk_bytes), "--tmpfs", folder]
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    env = {"PATH": "/usr/bin:/bin", "HOME": WORKDIR, "TMPDIR": "/tmp",
           "LD_LIBRARY_PATH": f"{PYTHON}/lib", "LANG": "C.UTF-8"}  # fmt: skip
    for name, value in env.items():
        args += ["--setenv", name, value]
    return [*args, "--chdir", WORKDIR, "--"]


def _system_mounts() -> list[str]:
    """``/usr`` read-only with its Python package folders empty; ``/bin``,
    ``/lib``... as on the host (links into ``/usr`` on merged-usr systems,
    read-only folders elsewhere)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for folder in allow.site_folders():
        args += _empty(folder)
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


def _empty(folder: str) -> list[str]:
    return ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]


@functools.cache
def _interpreter_mounts() -> tuple[str, ...]:
    """This interpreter's executable, shared library and standard library
    (``site-packages`` shown empty) at ``PYTHON``, whatever their host paths."""
    executable = os.path.realpath(sys.executable)
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    dynload = os.path.realpath(sysconfig.get_config_var("DESTSHARED") or "")
    for what, path in (("executable", executable), ("standard library", stdlib)):
        if not os.path.exists(path):
            raise SandboxUnavailable(
                f"the sandbox could not find this interpreter's {what} at {path}"
            )
    args = ["--ro-bind", executable, INTERPRETER, "--ro-bind", stdlib, allow.STDLIB]
    if dynload and not dynload.startswith(stdlib + os.sep) and os.path.isdir(dynload):
        args += ["--ro-bind", dynload, f"{allow.STDLIB}/lib-dynload"]
    for name in ("site-packages", "dist-packages"):
        if os.path.isdir(os.path.join(stdlib, name)):
            args += _empty(f"{allow.STDLIB}/{name}")
    library = _shared_library()
    if library:
        args += ["--ro-bind", library, f"{PYTHON}/lib/{os.path.basename(library)}"]
    return tuple(args)


def _shared_library() -> str | None:
    """``libpython`` where this interpreter links it (a shared build)."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return None
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var(
        "LDLIBRARY"
    )
    for folder in (sysconfig.get_config_var("LIBDIR"), sys.base_prefix + "/lib"):
        path = os.path.join(folder or "", name or "")
        if name and os.path.isfile(path):
            return os.path.realpath(path)
    return None


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
    ``SandboxUnavailable`` naming the step that failed, where it cannot."""
    found = (f"import sys, json; sys.exit(0 if sys.prefix == {PYTHON!r} else 'it found a "
             f"standard library at ' + sys.prefix + ', not its own at {PYTHON}')")  # fmt: skip
    probe = [*command(Path("/usr"), 2**20), INTERPRETER, "-I", "-c", found]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailable(f"bubblewrap could not start: {error}") from error
    if done.returncode != 0:
        raise SandboxUnavailable(diagnose(done.stderr.decode(errors="replace")))


def diagnose(stderr: str) -> str:
    """Which step of starting the sandbox failed, from what bwrap or the
    interpreter printed."""
    why = stderr.strip()[-600:] or "no message"
    line = next((x for x in stderr.splitlines() if x.startswith("bwrap:")), "")
    if re.search(r"execvp|exec ", line):
        return (f"the sandbox's interpreter could not be started ({why}); its "
                f"executable is bound at {INTERPRETER}")  # fmt: skip
    if line and any(word in line for word in NAMESPACE_ERRORS):
        return (f"bubblewrap could not create the sandbox's namespaces ({why}); "
                f"this kernel or container must allow user namespaces")  # fmt: skip
    if line and any(word in line for word in MOUNT_ERRORS):
        return f"bubblewrap could not build the sandbox's file system ({why})"
    if line:
        return f"bubblewrap failed ({why})"
    return (f"the interpreter started inside the sandbox but failed ({why}); its "
            f"standard library or shared library may be missing there")  # fmt: skip


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

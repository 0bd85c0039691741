"""Escapes from the sandbox, written as an attacker would, each checked from
the host. Most attempts first leave the audit hook behind: a child started
through multiprocessing's spawn context (``_posixsubprocess`` raises no audit
event) runs without it. So what these tests exercise is the OS boundary
(``evoflow.sandbox.isolation``), not the hook. Attacks on the verdict of a
code check are in ``test_attacks.py``."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evoflow.sandbox import Limits, run_files, run_python

FAST = Limits(seconds=8.0, memory_mb=512, output_kb=1024, processes=32, disk_mb=8)


def unhooked(code: str) -> str:
    """A program that runs ``code`` in a fresh interpreter without the audit
    hook, prints that interpreter's output as its own, and fails a test."""
    return (
        "import multiprocessing as mp\n"
        f"p = mp.get_context('spawn').Process(target=exec, args=({code!r},))\n"
        "p.start()\np.join()\nprint('child exit', p.exitcode, flush=True)\n"
    )


def attack(code: str, limits: Limits = FAST):
    outcome = run_python(unhooked(code), limits)
    assert "child exit" in outcome.stdout, outcome.stderr[-500:]  # the attempt ran
    return outcome


def test_the_spawn_context_does_leave_the_audit_hook_behind():
    # Listing / is refused by the hook; the unhooked child can, and sees the
    # sandbox's own small root, not the host's.
    outcome = attack("import os; print(sorted(os.listdir('/')), flush=True)")
    assert "'sandbox'" in outcome.stdout and "'home'" not in outcome.stdout


def test_a_directory_fd_write_into_the_installation_fails(tmp_path):
    name = f"escaped-{secrets.token_hex(4)}"
    program = (
        "import os, sys\n"
        "fd = os.open(sys.prefix, os.O_RDONLY)\n"
        f"os.open({name!r}, os.O_WRONLY | os.O_CREAT, dir_fd=fd)\n"
    )
    outcome = run_python(program, FAST)
    assert outcome.status == "crashed" and "Read-only file system" in outcome.stderr
    assert not (Path(sys.prefix) / name).exists()


def test_writes_to_host_paths_fail_even_without_the_hook(tmp_path):
    targets = [
        tmp_path / "escaped",
        Path(sys.prefix) / "escaped",
        Path.cwd() / "escaped",
    ]
    code = "\n".join(
        f"try:\n    open({str(t)!r}, 'w').write('x')\nexcept OSError as e:\n    print(e)"
        for t in targets
    )
    attack(code)
    assert not any(t.exists() for t in targets)


def test_a_symlink_out_of_the_folder_reaches_nothing(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host data")
    code = (
        f"import os\nos.symlink({str(secret)!r}, 'metrics.json')\n"
        f"os.symlink({str(tmp_path)!r}, 'out')\n"
        "try:\n    open('out/planted', 'w').write('x')\nexcept OSError as e:\n    print(e)"
    )
    program = unhooked(code)
    outcome, kept = run_files({"program.py": program}, FAST, collect=("metrics.json",))
    assert "child exit 0" in outcome.stdout
    assert "metrics.json" not in kept  # a link is never followed out
    assert not (tmp_path / "planted").exists() and secret.read_text() == "host data"


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_new_interpreters_stay_inside_and_die_with_the_run(method):
    # forkserver needs a unix socket, which the hook refuses: started from an
    # unhooked interpreter, it runs.
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6)}"
    code = (
        "import multiprocessing as mp\n"
        f"code = \"import os; os.setsid(); os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\"\n"
        f"p = mp.get_context({method!r}).Process(target=exec, args=(code,))\n"
        "p.start()\nprint('started', flush=True)\nimport os\nos._exit(0)\n"
    )
    outcome = attack(code)
    assert "started" in outcome.stdout, outcome.stderr[-500:]
    time.sleep(0.5)
    assert marker not in _host_command_lines()


def test_posix_spawn_cannot_touch_the_host(tmp_path):
    target = tmp_path / "spawned"
    code = (
        "import os\n"
        f"pid = os.posix_spawn('/bin/sh', ['sh', '-c', 'echo x > {target}'], {{}})\n"
        "print('status', os.waitpid(pid, 0)[1], flush=True)\n"
    )
    attack(code)
    assert not target.exists()


def test_host_processes_cannot_be_signalled():
    victim = subprocess.Popen(["sleep", "60"])
    try:
        code = (
            "import os, signal\n"
            f"for pid in ({victim.pid}, {os.getpid()}, 1):\n"
            "    try:\n        os.kill(pid, signal.SIGKILL)\n"
            "    except OSError as e:\n        print(pid, e, flush=True)\n"
            "try:\n"
            f"    fd = os.pidfd_open({victim.pid})\n"
            "    signal.pidfd_send_signal(fd, signal.SIGKILL)\n"
            "except OSError as e:\n    print('pidfd', e, flush=True)\n"
        )
        attack(code)
        time.sleep(0.2)
        assert victim.poll() is None  # still running
    finally:
        victim.kill()
        victim.wait()


def test_ctypes_calls_are_refused_by_the_hook():
    outcome = run_python("import ctypes\nctypes.CDLL(None).fork()", FAST)
    assert outcome.status == "crashed" and "ctypes" in outcome.stderr


@pytest.mark.skipif(
    not Path("/usr/bin/gcc").exists(), reason="needs gcc to build the module"
)
def test_a_dropped_extension_module_runs_but_stays_inside(tmp_path):
    # gcc is part of this project's machine kind (Debian with build tools)
    target = tmp_path / "from-extension"
    source = tmp_path / "evil.c"
    source.write_text(
        "#include <fcntl.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void run(void) {\n"
        f'  int fd = open("{target}", O_WRONLY | O_CREAT, 0644);\n'
        '  if (fd >= 0) { write(fd, "x", 1); close(fd); }\n'
        '  if (fork() == 0) { execl("/bin/sh", "sh", "-c", '
        f'"echo x > {target}", (char *)0); _exit(0); }}\n'
        "}\n"
    )
    library = tmp_path / "evil.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True
    )
    files = {"program.py": "import ctypes\nctypes.CDLL('./evil.so')\nprint('loaded')\n",
             "evil.so": library.read_bytes()}  # fmt: skip
    outcome, _ = run_files(files, FAST)
    assert "loaded" in outcome.stdout, outcome.stderr[-500:]
    time.sleep(0.2)
    assert not target.exists()


def test_the_parent_environment_cannot_be_read(monkeypatch):
    value = secrets.token_hex(8)
    monkeypatch.setenv("EVOFLOW_ESCAPE_PROBE", value)
    code = (
        "import os\n"
        "print('env', sorted(os.environ), flush=True)\n"
        "for path in ('/proc/1/environ', '/proc/self/environ', f'/proc/{os.getppid()}/environ'):\n"
        "    try:\n        print(open(path, 'rb').read(), flush=True)\n"
        "    except OSError as e:\n        print(path, e, flush=True)\n"
    )
    outcome = attack(code)
    assert value not in outcome.stdout and "EVOFLOW_ESCAPE_PROBE" not in outcome.stdout
    assert "No such file or directory" in outcome.stdout  # no /proc at all


def test_a_fork_bomb_meets_the_process_cap():
    code = (
        "import os, time\nn = 0\n"
        "try:\n    while True:\n        if os.fork() == 0:\n            time.sleep(30)\n"
        "            os._exit(0)\n        n += 1\n"
        "except OSError as e:\n    print('forks', n, e, flush=True)\n"
    )
    started = time.perf_counter()
    outcome = attack(code)
    forks = int(outcome.stdout.split("forks ")[1].split()[0])
    assert forks < FAST.processes
    assert time.perf_counter() - started < FAST.seconds + 5
    assert _host_can_fork()


def test_filling_the_disk_stops_at_the_cap():
    code = (
        "import os\nwritten = 0\n"
        "try:\n    for i in range(10**6):\n        with open(f'f{i}', 'wb') as f:\n"
        "            f.write(b'x' * 2**19)\n        written += 2**19\n"
        "except OSError as e:\n    print('written', written, e, flush=True)\n"
    )
    outcome = attack(code)
    written = int(outcome.stdout.split("written ")[1].split()[0])
    assert written <= FAST.disk_mb * 2**20
    assert "No space left on device" in outcome.stdout


def test_no_address_of_the_host_can_be_reached():
    listeners = []
    for address in _host_addresses():
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind((address, 0))
        server.listen()
        server.setblocking(False)
        listeners.append(server)
    assert any(s.getsockname()[0] != "127.0.0.1" for s in listeners), _host_addresses()
    code = "import socket\n" + "".join(
        f"try:\n    socket.create_connection({s.getsockname()!r}, timeout=2)\n"
        f"    print('connected', flush=True)\n"
        f"except OSError as e:\n    print('blocked', e, flush=True)\n"
        for s in listeners
    )
    outcome = attack(code)
    assert "connected" not in outcome.stdout and outcome.stdout.count("blocked") == len(
        listeners
    )
    for server in listeners:
        with pytest.raises(BlockingIOError):
            server.accept()
        server.close()


def _host_addresses() -> list[str]:
    """The host's own IPv4 addresses (loopback included), from the kernel's
    routing table."""
    lines = Path("/proc/net/fib_trie").read_text().splitlines()
    found = {
        lines[i - 1].split()[-1]
        for i, line in enumerate(lines)
        if "/32 host LOCAL" in line
    }
    return sorted(found | {"127.0.0.1"})


def _host_command_lines() -> str:
    seen = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                seen.append(
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                )
            except OSError:
                continue
    return "\n".join(seen)


def _host_can_fork() -> bool:
    return subprocess.run(["true"], timeout=10).returncode == 0


def test_the_wall_clock_kill_reaches_every_descendant():
    marker = f"{secrets.randbelow(10**6)}.5"
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n    os.setsid()\n"
        f"    os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\n"
        "print('child exit 0', flush=True)\ntime.sleep(60)\n"
    )
    limits = Limits(seconds=2.0, memory_mb=512, processes=16, disk_mb=8)
    outcome = run_python(unhooked(code), limits)
    assert outcome.status == "timeout"
    time.sleep(0.5)
    assert marker not in _host_command_lines()


def test_the_keeper_and_its_channel_cannot_be_reached():
    # The channel's fd number is in the readable run settings; an unhooked
    # child tries to copy it out of init (the keeper) with pidfd_getfd and to
    # attach with ptrace, then to write a verdict of its own.
    code = (
        "import ctypes, json, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = json.load(open('/sandbox/in/run.json'))['channel_fd']\n"
        "got = libc.syscall(438, os.pidfd_open(1), fd, 0)\n"  # pidfd_getfd
        "print('pidfd_getfd', got, ctypes.get_errno(), flush=True)\n"
        "print('ptrace', libc.ptrace(16, 1, 0, 0), ctypes.get_errno(), flush=True)\n"  # ATTACH
        "if got >= 0:\n"
        "    os.write(got, json.dumps({'verdict': {'how': 'exit:0'}}).encode() + b'\\n')\n"
    )
    program = unhooked(code) + "\nimport os\nos._exit(3)\n"
    outcome = run_python(program, FAST)
    assert (
        "pidfd_getfd -1 1" in outcome.stdout and "ptrace -1 1" in outcome.stdout
    )  # EPERM
    assert outcome.status == "crashed" and outcome.returncode == 3


def test_dev_is_read_only_and_dev_shm_is_capped():
    code = (
        "import os\nfor d in ('/dev', '/dev/shm'):\n    written = 0\n"
        "    try:\n        for i in range(1000):\n"
        "            with open(f'{d}/f{i}', 'wb') as f:\n                f.write(b'x' * 2**19)\n"
        "            written += 2**19\n"
        "    except OSError as e:\n        print(d, written, e.strerror, flush=True)\n"
    )
    outcome = attack(code)
    assert "/dev 0 Read-only file system" in outcome.stdout
    shm = [line for line in outcome.stdout.splitlines() if line.startswith("/dev/shm ")]
    assert shm and int(shm[0].split()[1]) <= FAST.disk_mb * 2**20, shm


def test_packages_that_hold_the_tasks_data_are_hidden():
    # scikit-learn ships the digits rows Helmsman's tasks are made of, and
    # evoflow holds every task generator and its seeds: a program could look
    # its test labels up with either. Neither imports (an empty folder stands
    # in for each), and the digits file, read by its host path, is not there.
    import sklearn

    digits = Path(sklearn.__file__).parent / "datasets" / "data" / "digits.csv.gz"
    assert digits.is_file()  # on the host
    code = (
        "import importlib\n"
        "for name in ('sklearn.datasets', 'evoflow.helmsman.partitions'):\n"
        "    try:\n        importlib.import_module(name)\n        print('imported', name)\n"
        "    except ImportError:\n        print('no', name)\n"
        f"try:\n    open({str(digits)!r}, 'rb').read(1)\n    print('read digits')\n"
        "except OSError:\n    print('no digits file')\n"
    )
    outcome = attack(code)
    assert "no sklearn" in outcome.stdout and "no evoflow" in outcome.stdout, (
        outcome.stdout
    )
    assert "no digits file" in outcome.stdout and "imported" not in outcome.stdout

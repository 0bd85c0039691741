"""Warm job start: a run's script jobs forked from one interpreter that has
already imported torch, transformers, peft and evoflow.

A Snakemake ``script:`` job is a new Python process, and a model job spends
about 4 s importing before its first line of work (``benchmarks/warm_start.py``)
— most of a tiny-model job, and minutes over the hundred jobs of a run. When a local
run starts, the Snakefile starts a server (``serve``) that binds a Unix socket
in a private folder, imports the heavy modules once, and then forks one child
per job that asks: the job's process (``handoff``, the first statement of every
script) sends its script, working directory, environment and standard streams;
the child takes them on, runs the script as ``__main__`` and sends back its exit
code, which the job's process exits with. Nothing else changes: the script,
its files, its log and its exit code are the job's own.

- The server imports before it forks, never computes: torch has no thread
  pool yet, and a child sizes torch's and the BLAS libraries' pools to the
  job's thread count (Snakemake's ``OMP_NUM_THREADS``).
- Signals to the job's process (Ctrl-C, Snakemake's SIGTERM) go on to the
  child's process group; if the job's process dies, the child sees the socket
  close and its group gets SIGTERM, then SIGKILL.
- A child that dies by a signal (out of memory) leaves its job exiting 1
  with a line saying so: the server, not the job's process, is its parent.
- If no server answers (none started, remote execution, a server that died)
  or the job needs another interpreter (a conda env, other ``PYTHON*``
  variables), ``handoff`` returns and the job runs cold in its own process.
- GPU machines start no server: a process that touched CUDA cannot fork.
- The server leaves when the run ends or when its parent Snakemake is gone.
- Only this user reaches it: the socket's folder is private (0700) and every
  peer's uid is checked.

``EVOFLOW_WARMSTART=0`` turns it off for a run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SOCKET_VAR = "EVOFLOW_WARM_SOCKET"  # set for the jobs of a run that has a server
CHILD_VAR = "EVOFLOW_WARM_CHILD"  # set inside a forked job
SWITCH_VAR = "EVOFLOW_WARMSTART"  # "0" turns warm starts off
LEDGER_VAR = "EVOFLOW_WARM_LEDGER"  # where job processes note their children's usage
READY_TIMEOUT_S = 30  # waiting for the server's socket
CONNECT_TIMEOUT_S = 10
START_TIMEOUT_S = 300  # a job waits this long for the server to take it, then runs cold
GRACE_S = 5  # SIGTERM to SIGKILL for a job whose process is gone
PRELOAD = (  # in this order: lean_import must come before transformers' models
    "evoflow.policy.lean_import",
    "torch",
    "transformers",
    "peft",
    "pyarrow.parquet",
    "snakemake.io",
    "evoflow.train.run",
    "evoflow.evaluate.run",
    "evoflow.rollout.explore",
    "evoflow.policy.hf",
    "evoflow.fed.server_round",
)
_HEADER = struct.Struct("!I")
LEDGER = "warm_jobs.jsonl"  # its name beside a run's benchmark files
_REPLY = struct.Struct("!idd")  # exit code, peak RSS (MB), CPU seconds
_STARTED = struct.Struct("!i")  # the child's pid (and process group)
_PEER = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


def handoff() -> None:
    """Run the calling script in the run's warm server, if it has one, and exit
    with its code; return (run cold) when there is none."""
    address = os.environ.get(SOCKET_VAR)
    if not address or os.environ.get(CHILD_VAR):
        return
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.connect(address)
        payload = json.dumps({"script": os.path.abspath(sys.argv[0]), "cwd": os.getcwd(),
                              "env": dict(os.environ), "python": sys.executable}).encode()  # fmt: skip
        socket.send_fds(conn, [_HEADER.pack(len(payload))], [0, 1, 2])
        conn.sendall(payload)
        conn.settimeout(START_TIMEOUT_S)  # the server may still be importing
        started = _recv_exact(conn, _STARTED.size)
        conn.settimeout(None)  # a job runs as long as it runs
    except OSError as exc:
        started, reason = None, exc
    else:
        reason = "the server did not take the job"
    if started is None:
        conn.close()
        sys.stderr.write(f"warm start: {reason}; starting cold\n")
        return
    group = _STARTED.unpack(started)[0]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _: _forward(group, number))
    reply = _recv_exact(conn, _REPLY.size)
    if reply is None:
        sys.stderr.write("warm start: the job's process ended without an exit code "
                         "(killed by a signal: out of memory?)\n")  # fmt: skip
        sys.exit(1)
    code, rss_mb, cpu_s = _REPLY.unpack(reply)
    _note_usage(rss_mb, cpu_s)
    sys.exit(code)


def _forward(group: int, number: int) -> None:
    """A signal for the job goes to the process group doing its work."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, number)


def serve(address: str, owner: int, preload: tuple[str, ...]) -> None:
    """Bind ``address``, import ``preload``, then fork a child per job until
    process ``owner`` is gone or SIGTERM arrives."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)  # jobs that connect while we import wait here
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the jobs, not us
    for name in preload:
        try:
            __import__(name)
        except Exception as exc:  # a job that needs it imports it (and says why)
            sys.stderr.write(f"warm start: {name} not preloaded: {exc}\n")
    try:
        while os.getppid() == owner and os.path.exists(address):  # a stop removes it
            if select.select([listener], [], [], 1.0)[0]:
                conn, _ = listener.accept()
                with conn:
                    _accept(listener, conn)
            _reap()
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(address)
            os.rmdir(os.path.dirname(address))


_running: list = []  # the (process, address) this process started


def begin(preload: tuple[str, ...] = (), ledger: str | None = None) -> str | None:
    """Start a server for the jobs this process will start (its address goes
    into their environment, and ``ledger``, where they note their usage);
    None when switched off or it did not come up."""
    if os.environ.get(SWITCH_VAR) == "0" or _running or _has_gpu():
        return None
    try:
        process, address = start(preload=PRELOAD + tuple(preload))
    except OSError as exc:  # no private folder or no process: the jobs start cold
        sys.stderr.write(f"warm start: no server ({exc}); jobs start cold\n")
        return None
    if process is not None:
        _running.append((process, address))
        os.environ[SOCKET_VAR] = address
        if ledger:
            Path(ledger).parent.mkdir(parents=True, exist_ok=True)
            os.environ[LEDGER_VAR] = str(Path(ledger).resolve())
    return address


def _has_gpu() -> bool:
    """An NVIDIA device node: its jobs start cold (CUDA and fork do not mix)."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


def end() -> None:
    """Stop the server ``begin`` started."""
    os.environ.pop(SOCKET_VAR, None)
    os.environ.pop(LEDGER_VAR, None)
    while _running:
        stop(*_running.pop())


def start(folder: str | Path | None = None, preload: tuple[str, ...] = ()) -> tuple:
    """Start a server that imports ``preload``: (process, socket path), or
    (None, None) when it does not come up."""
    home = Path(tempfile.mkdtemp(prefix="evoflow-warm-", dir=folder))  # 0700
    address = str(home / "jobs.sock")
    extra = [arg for name in preload for arg in ("--preload", name)]
    command = [
        sys.executable,
        "-P",
        "-m",
        "evoflow.warmstart",
        address,
        str(os.getpid()),
    ]
    process = subprocess.Popen([*command, *extra], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not os.path.exists(address):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process, address)
            return None, None
        time.sleep(0.05)
    return process, address


def stop(process, address: str | None) -> None:
    """End the server and remove its folder."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    if address:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(address)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(address))


def _accept(listener: socket.socket, conn: socket.socket) -> None:
    conn.settimeout(CONNECT_TIMEOUT_S)
    peer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER.size)
    if _PEER.unpack(peer)[1] != os.getuid():
        return
    fds: list[int] = []
    try:
        header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
        request = json.loads(_recv_exact(conn, _HEADER.unpack(header)[0]) or b"")
        if len(fds) == 3 and _same_interpreter(request):
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                try:
                    listener.close()
                    _child(conn, fds, request)
                finally:
                    os._exit(1)  # never back into the server's loop
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        pass  # the job's process sees the socket close and runs cold
    finally:
        for fd in fds:
            os.close(fd)


def _same_interpreter(request: dict) -> bool:
    """The job's interpreter and start-up variables are the server's (a conda
    env, or another PYTHONHASHSEED, needs a cold start)."""
    ours = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    theirs = {k: v for k, v in request["env"].items() if k.startswith("PYTHON")}
    return request["python"] == sys.executable and ours == theirs


def _child(conn: socket.socket, fds: list[int], request: dict) -> None:
    """Become the job: its streams, folder and environment; run its script."""
    code = 1
    try:
        os.setpgid(0, 0)  # the job's own group, so a cancelled job takes its children
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"], **{CHILD_VAR: "1"})
        _as_a_new_process(request["script"])
        conn.settimeout(None)
        conn.sendall(_STARTED.pack(os.getpid()))
        finished = threading.Event()
        threading.Thread(target=_watch, args=(conn, finished), daemon=True).start()
        code = _run(request["script"])
        finished.set()
        conn.sendall(_REPLY.pack(code, *_usage()))
    finally:
        os._exit(code)


def _as_a_new_process(script: str) -> None:
    """What a fresh ``python script`` would have that the fork does not: its
    temp dir, random state, thread counts, argv and ``sys.path[0]``."""
    tempfile.tempdir = None  # the job's TMPDIR, not the server's
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # from the OS, as at a cold import
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
        with contextlib.suppress(ImportError):
            from threadpoolctl import threadpool_limits

            threadpool_limits(int(threads))
    sys.argv = [script]
    sys.path[0:0] = [os.path.dirname(script)]


def _run(script: str) -> int:
    import atexit
    import logging
    import runpy
    import traceback

    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            sys.stderr.write(f"{exc.code}\n")
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # as at interpreter exit: wait for non-daemon threads
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        ctypes.CDLL(None).fflush(None)  # C-level stdio buffers
    return code % 256  # as the exit status a process can carry


def _usage() -> tuple[float, float]:
    """Peak RSS (MB) of this job or its largest descendant, and the CPU seconds
    of both (Linux counts ``ru_maxrss`` in KiB)."""
    own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN))  # fmt: skip
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    return max(own.ru_maxrss, kids.ru_maxrss) / 1024, cpu


def _note_usage(rss_mb: float, cpu_s: float) -> None:
    """A Snakemake benchmark measures this waiting process, not the child that
    did the work: note the child's usage for ``evoflow timing`` (one JSON line
    per job, keyed by rule and first output)."""
    ledger = os.environ.get(LEDGER_VAR)
    job = getattr(sys.modules.get("__main__"), "snakemake", None)
    if not ledger or job is None:
        return
    outputs = [str(path) for path in job.output]
    line = json.dumps({"rule": job.rule, "output": outputs[0] if outputs else None,
                       "max_rss": round(rss_mb, 2), "cpu_time": round(cpu_s, 2)})  # fmt: skip
    # One short append a job: parallel jobs leave whole lines.
    with contextlib.suppress(OSError), open(ledger, "a") as handle:
        handle.write(line + "\n")


def _watch(conn: socket.socket, finished: threading.Event) -> None:
    """The job's process is gone (the socket closed): end this job's group,
    politely first."""
    with contextlib.suppress(OSError):
        conn.recv(1)
    if not finished.is_set():
        os.killpg(0, signal.SIGTERM)
        if not finished.wait(GRACE_S):
            os.killpg(0, signal.SIGKILL)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _recv_exact(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


if __name__ == "__main__":
    args = sys.argv[1:]
    extra = tuple(args[i + 1] for i, arg in enumerate(args) if arg == "--preload")
    serve(args[0], int(args[1]), extra)

"""Environment steps/s in-process vs over HTTP with 1, 8 and 32 concurrent clients.

Each client replays expert action lists of training tasks (precomputed, so the
expert's planning is not timed). In-process: the same replays on local envs in
one thread. HTTP: an ``evoflow serve-env`` subprocess, one ``RemoteEnv`` and one
connection per client thread; step latency p50/p99 is measured around each call.
"Batched" sends all clients' actions of a turn in one ``POST /v1/step`` — how a
rollout over many episodes can drive a remote env.

    python benchmarks/env_http.py [--envs maze wordle] [--seconds 5]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import threading
import time

import httpx

from evoflow.envs import make_env, play_expert
from evoflow.envs.remote import RemoteEnv

TASKS = 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scripts(env_name: str) -> list[tuple[str, list[str]]]:
    env = make_env(env_name)
    tasks = env.task_ids("train")[:TASKS]
    return [(t, play_expert(env, t).actions) for t in tasks]


def in_process(env_name: str, plays, seconds: float) -> float:
    env = make_env(env_name)
    steps, start, busy = 0, time.perf_counter(), 0.0
    while time.perf_counter() - start < seconds:
        for task, actions in plays:
            env.reset(task)
            t0 = time.perf_counter()
            for action in actions:
                env.step(action)
            busy += time.perf_counter() - t0
            steps += len(actions)
    return steps / busy


def over_http(
    url: str, plays, clients: int, seconds: float
) -> tuple[float, float, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def client(k: int) -> None:
        mine = []
        with RemoteEnv(url) as env:
            while time.perf_counter() < stop:
                for task, actions in plays[k % len(plays) :] + plays[: k % len(plays)]:
                    env.reset(task)
                    for action in actions:
                        t0 = time.perf_counter()
                        env.step(action)
                        mine.append(time.perf_counter() - t0)
                    if time.perf_counter() >= stop:
                        break
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    return len(latencies) / wall, p50 * 1e3, p99 * 1e3


def batched(url: str, plays, sessions: int, seconds: float) -> float:
    """One client steps ``sessions`` episodes per request, as a rollout turn would."""
    with httpx.Client(base_url=url, timeout=30) as http:
        ids = [http.post("/v1/sessions").json()["id"] for _ in range(sessions)]
        steps, busy, stop = 0, 0.0, time.perf_counter() + seconds
        while time.perf_counter() < stop:
            chosen = [plays[(i + steps) % len(plays)] for i in range(sessions)]
            for sid, (task, _) in zip(ids, chosen, strict=True):
                http.post(f"/v1/sessions/{sid}/reset", json={"task_id": task})
            depth = min(len(a) for _, a in chosen)
            t0 = time.perf_counter()
            for turn in range(depth):
                body = {
                    "steps": [
                        {"id": i, "action": a[turn]}
                        for i, (_, a) in zip(ids, chosen, strict=True)
                    ]
                }
                http.post("/v1/step", json=body).raise_for_status()
            busy += time.perf_counter() - t0
            steps += depth * sessions
        return steps / busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--envs",
        nargs="+",
        default=["maze", "wordle", "textcraft", "babyai", "webshop"],
    )
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    for env_name in args.envs:
        plays = scripts(env_name)
        local = in_process(env_name, plays, args.seconds)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "evoflow.cli", "serve-env", env_name, "--port", str(port),
             "--max-sessions", "1024"],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    httpx.get(url + "/health", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            print(f"{env_name}: in-process {local:,.0f} steps/s")
            for clients in (1, 8, 32):
                rate, p50, p99 = over_http(url, plays, clients, args.seconds)
                print(
                    f"{env_name}: http {clients:>2} clients {rate:8,.0f} steps/s "
                    f"(ratio {rate / local:.3f})  p50 {p50:.2f} ms  p99 {p99:.2f} ms"
                )
            rate = batched(url, plays, 32, args.seconds)
            print(
                f"{env_name}: http batched 32 sessions/request {rate:8,.0f} steps/s (ratio {rate / local:.3f})"
            )
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()

"""Page load times of the trajectory explorer over 1M synthetic episodes
(``store_query.py``'s generator): start-up (every shard opened and checked),
the filtered episode list with its success chart, one episode, a comparison;
the baseline is the same filtered count as one bare DuckDB query over the
``episodes`` view, measured in the same run. Goal: a filtered list under 1 s.

    python benchmarks/explorer_load.py [--episodes 1000000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from store_query import METHODS, build  # noqa: E402


def timed(call, repeat: int = 5) -> float:
    """Median seconds of ``repeat`` calls (after one warm-up call)."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    from fastapi.testclient import TestClient

    from evoflow.explorer.app import create_app
    from evoflow.store.query import connect

    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        results = workdir / "results"
        if not results.exists():
            build(workdir, args.episodes)
        start = time.perf_counter()
        client = TestClient(create_app(results))
        startup = time.perf_counter() - start
        method = METHODS[0]
        query = {"method": method, "round": "3", "success": "true"}
        con = connect(results)
        bare = timed(lambda: con.execute(
            "SELECT count(*) FROM episodes WHERE method = ? AND round = 3 AND success",
            [method]).fetchone())  # fmt: skip
        listing = timed(lambda: client.get("/", params=query).raise_for_status())
        first = client.get("/api/episodes", params=query).json()["episodes"][0]
        episode = timed(
            lambda: client.get("/episode", params={"id": first["episode_id"]})
        )
        compare = timed(lambda: client.get("/compare", params={
            "task_id": first["task_id"], "env": first["env"], "a": method}))  # fmt: skip
        unfiltered = timed(lambda: client.get("/").raise_for_status())
    print(f"{args.episodes:,} episodes; median of 5 requests (2-core machine)")
    print(f"start-up (open and check every shard): {startup:.2f} s")
    print(f"bare DuckDB filtered count (baseline):  {bare * 1000:.0f} ms")
    print(f"filtered list page + chart:            {listing * 1000:.0f} ms "
          f"({listing / bare:.1f}x the bare count; goal < 1000 ms)")  # fmt: skip
    print(f"unfiltered list page + chart:          {unfiltered * 1000:.0f} ms")
    print(f"one episode:                           {episode * 1000:.0f} ms")
    print(f"comparison of two methods:             {compare * 1000:.0f} ms")


if __name__ == "__main__":
    main()

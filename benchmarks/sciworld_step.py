"""SciWorld step speed: evoflow's simulator calls vs the package's ``step``.

The PyPI package's ``ScienceWorldEnv.step`` also fetches the look-around text,
the inventory, the task description and every valid action/object pair on each
call; evoflow's ``Simulator.step`` asks only for the observation, score and
completion. Both replay the same gold paths (one test game of each task type)
in one JVM each, in the same run:

    python benchmarks/sciworld_step.py
"""

from __future__ import annotations

import time

from evoflow.envs.sciworld import SciWorldEnv, game_for
from evoflow.envs.sciworld_sim import Simulator


def gold_paths(simulator: Simulator) -> list[tuple[tuple[str, int], list[str]]]:
    seen, paths = set(), []
    for task_id in SciWorldEnv().task_ids("test"):
        game = game_for(task_id)
        if game[0] in seen:
            continue
        seen.add(game[0])
        simulator.load(*game, gold=True)
        paths.append((game, simulator.gold_actions()))
    return paths


def timed(step, load, paths) -> tuple[float, int]:
    steps, start = 0, time.perf_counter()
    for game, actions in paths:
        load(*game)
        for action in actions:
            step(action)
            steps += 1
    return time.perf_counter() - start, steps


def main() -> None:
    ours, theirs = Simulator(), Simulator()
    try:
        paths = gold_paths(ours)
        package = theirs._env
        for _ in range(2):  # the second pass is measured (JIT warm)
            ours_s, steps = timed(ours.step, ours.load, paths)
            package_s, _ = timed(
                package.step, lambda t, v: package.load(t, v, ""), paths
            )
    finally:
        ours.close()
        theirs.close()
    print(f"{len(paths)} gold paths, {steps} steps")
    print(f"package step():  {1000 * package_s / steps:7.2f} ms/step")
    print(f"evoflow step():  {1000 * ours_s / steps:7.2f} ms/step")
    print(f"speed-up: {package_s / ours_s:.2f}x")


if __name__ == "__main__":
    main()

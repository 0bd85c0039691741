"""One embedded evaluation job with and without shared openings in the hf backend.

The job the embedded default runs for the Pre-Trained row: greedy, constrained
actions, ``config/config.yaml``'s test tasks of every env (its strata, turn caps
and width), all envs played together. ``shared`` encodes the opening that new
episodes of one call share (an env's instructions) once (``share_prefix``);
``plain`` encodes every prompt whole. Prints wall time, prompt and decode tokens
fed to the model, the ratio (plain / shared, in the same run) and how many
episodes are identical token for token.

``--width`` overrides the config's ``generation.width`` for both.

    python benchmarks/prefix_sharing.py [--config config/config.yaml]
        [--tasks 20] [--threads 1] [--width N]
"""

from __future__ import annotations

import argparse
import time

import torch
from eval_throughput import FED, count_forward
from openvino_backend import capped

from evoflow.config import load_config
from evoflow.evaluate.run import evaluate_envs
from evoflow.policy.hf import HFPolicy
from evoflow.runtime import rollout_spec


def run(config: dict, share: bool, tasks: int):
    model = config["model"]
    policy = HFPolicy(model["name"], max_context=model["max_context"],
                      batch_size=model["batch_size"], dtype=model["dtype"],
                      share_prefix=share)  # fmt: skip
    envs = config["envs"]
    specs = {env: rollout_spec(config, env, method="bench", round=0, client=env,
                               split="test", source="eval", temperature=0.0)
             for env in envs}  # fmt: skip
    envs = {e: capped(envs[e], tasks) for e in envs}
    before = dict(FED)
    start = time.perf_counter()
    results = evaluate_envs(policy, specs, envs, config["generation"]["width"])
    seconds = time.perf_counter() - start
    policy.close()
    episodes = [e for env in results.values() for e in env[0]]
    return episodes, seconds, {k: FED[k] - before[k] for k in FED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--tasks", type=int, default=20, help="test tasks per env")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--width", type=int, help="episodes decoded together")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    count_forward()
    config = load_config(args.config)
    if args.width:
        config["generation"]["width"] = args.width
    results = {name: run(config, name == "shared", args.tasks)
               for name in ("plain", "shared")}  # fmt: skip
    for name, (episodes, seconds, fed) in results.items():
        turns = sum(e.n_turns for e in episodes)
        print(f"{name:>6}: {len(episodes)} episodes, {turns} turns in {seconds:.0f} s; "
              f"fed {fed['prefill']} prompt + {fed['decode']} decode tokens")  # fmt: skip
    played = {
        n: [[m.content for m in e.messages] for e in r[0]] for n, r in results.items()
    }
    same = sum(a == b for a, b in zip(played["plain"], played["shared"], strict=True))
    ratio = results["plain"][1] / results["shared"][1]
    print(f"wall time plain / shared: {ratio:.2f}x; identical episodes "
          f"{same}/{len(played['shared'])}")  # fmt: skip


if __name__ == "__main__":
    main()

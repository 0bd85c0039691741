"""End to end: one evaluation job and one exploration job of ``make run``, played
by the ``hf`` backend and by vLLM, in one run.

The episodes are ``config/config.yaml``'s (strata, turn caps, width, the action
constraint, 40 new tokens): an evaluation job's greedy test episodes of every
env, and a round's exploration job (``envs.<env>.explore`` training tasks per
env at temperature 1.0, one batch as ``explore_envs`` plays them), each with
the trained adapter ``--adapter`` batch-wide, as a federated round's jobs have.
The rollout loop runs here, in the project's environment; vLLM runs in
``.venv-vllm`` (``scripts/setup/vllm.sh``; its pins differ from the project's
lock), one engine process per engine and job, spoken to over a pipe:

hf            the project's default backend, in this process
vllm_lora     vLLM, the adapter served per request (``LoRARequest``)
vllm_merged   vLLM on a copy of the weights with the adapter merged into
              them (the merge and the engine's start counted in the job)

Each engine's time counts its start (model load, vLLM's engine) and the play.
Printed per job and engine: start, play and total seconds, the ratio against
``hf`` (``hf`` time / engine time: above 1 is faster), successes, and how many
episodes are identical to ``hf``'s message for message (greedy only; sampled
episodes draw other random numbers in another engine).

    .venv/bin/python benchmarks/engine_e2e.py --adapter FOLDER [--tasks N]
        [--explore N] [--threads 1] [--jobs eval,explore] [--dtype D]
        [--engines hf,vllm_lora,vllm_merged]

``--threads 1`` is one job's share of ``make run`` on 2 cores (two jobs at once).
Every engine runs in one dtype, the config's as this machine resolves it
(``auto``: bf16 where the CPU has bf16 units, else fp32) unless ``--dtype`` says.
The two constraints are not the same contract (see ``evoflow.policy.structured``),
so ``same as hf`` and ``solved`` mix engine and constraint.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import select
import struct
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
ENGINES = ("hf", "vllm_lora", "vllm_merged")
JOBS = ("eval", "explore")
REPLY_TIMEOUT = 900.0  # seconds for one generate call, engine start included


def send(stream, value) -> None:
    data = pickle.dumps(value)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def receive(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the engine process closed its pipe")
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(size))


def serve(model: str, max_context: int, dtype: str, rank: int) -> None:
    """The engine process: a VLLMPolicy answering pickled generate calls."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # vLLM's own prints go to stderr, not into the pipe
    from evoflow.policy.vllm import VLLMPolicy

    policy = VLLMPolicy(model, max_context=max_context, max_lora_rank=rank, dtype=dtype)
    send(channel, ("ready", None))
    source = os.fdopen(0, "rb")
    while True:
        try:
            args, kwargs = receive(source)
        except EOFError:
            break
        try:
            send(channel, ("ok", policy.generate(*args, **kwargs)))
        except Exception as exc:  # the caller raises it
            send(channel, ("error", repr(exc)))
    policy.close()


def pipe_policy_class():
    from evoflow.policy.base import Policy, PolicyError

    class PipePolicy(Policy):
        """A Policy whose generate calls run in a vLLM engine process."""

        def __init__(
            self, model: str, max_context: int, threads: int, dtype: str, rank: int
        ) -> None:
            self.model_id, self.max_context = model, max_context
            env = {
                **os.environ,
                "OMP_NUM_THREADS": str(threads),
                "VLLM_CPU_OMP_THREADS_BIND": "nobind",
            }
            command = [
                str(VLLM_PYTHON),
                __file__,
                "--serve",
                model,
                "--max-context",
                str(max_context),
                "--dtype",
                dtype,
                "--rank",
                str(rank),
            ]
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
            )
            self._call(None)

        def _call(self, request):
            if request is not None:
                send(self._process.stdin, request)
            ready, _, _ = select.select([self._process.stdout], [], [], REPLY_TIMEOUT)
            if not ready:  # the buffer is empty between replies, so the pipe decides
                self._process.kill()
                raise PolicyError(f"vLLM engine process: no reply in {REPLY_TIMEOUT} s")
            status, value = receive(self._process.stdout)
            if status == "error":
                raise PolicyError(f"vLLM engine process: {value}")
            return value

        def generate(
            self, chats, params, adapter=None, seeds=None, keys=None, choices=None
        ):
            return self._call(
                ((chats, params, adapter), {"seeds": seeds, "choices": choices})
            )

        def close(self) -> None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()

    return PipePolicy


def merged_copy(base: Path, adapter: str, folder: Path, dtype: str) -> Path:
    """``base``'s weights with ``adapter`` merged in, saved to ``folder``."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype=getattr(torch, dtype))
    model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return folder


def job_list(config: dict, job: str, adapter: str, tasks: int | None, explore: int):
    """(factories, jobs, width) of an evaluation or an exploration job."""
    from dataclasses import replace

    from evoflow.envs import configured_factory, split_ids
    from evoflow.evaluate.run import eval_tasks
    from evoflow.rollout.engine import Job
    from evoflow.runtime import rollout_spec
    from evoflow.seeding import choose

    factories, jobs = {}, []
    for env, entry in config["envs"].items():
        factories[env] = configured_factory(env, entry)
        if job == "eval":
            kind = {"split": "test", "source": "eval", "temperature": 0.0}
        else:
            kind = {"split": "train", "source": "explore"}
        spec = rollout_spec(
            config, env, method="bench", round=5, client=env, adapter=adapter, **kind
        )
        if job == "eval":
            count = entry["test"] if tasks is None else min(tasks, entry["test"])
            chosen = eval_tasks(
                env, count, spec.seed, entry.get("remote"), entry.get("strata"), "test"
            )
        else:
            train = split_ids(env, "train", entry["remote"], entry.get("strata"))
            chosen = choose(train, explore, config["seed"], "explore", 5, env)
        spec = replace(spec, samples=1)
        jobs += [Job(env, task, 0, spec) for task in chosen]
    width = config["generation"]["width"] * (1 if job == "eval" else len(factories))
    return factories, jobs, width


def run_engine(engine: str, config: dict, job: str, adapter: str, args) -> dict:
    """Start ``engine``, play ``job``'s episodes, close it; times and episodes."""
    from dataclasses import replace

    from evoflow.policy.models import resolve_model
    from evoflow.rollout.engine import play
    from evoflow.runtime import policy_from_config

    model = config["model"]
    factories, jobs, width = job_list(config, job, adapter, args.tasks, args.explore)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evoflow-merged-") as tmp:
        if engine == "hf":
            policy, served = policy_from_config(config), adapter
        else:
            folder = resolve_model(model["name"])
            if engine == "vllm_merged":
                folder = merged_copy(folder, adapter, Path(tmp), model["dtype"])
                served = None
            else:
                served = adapter
            rank = json.loads((Path(adapter) / "adapter_config.json").read_text())["r"]
            policy = pipe_policy_class()(
                str(folder), model["max_context"], args.threads, model["dtype"], rank
            )
        started = time.perf_counter() - start
        jobs = [replace(j, spec=replace(j.spec, adapter=served)) for j in jobs]
        try:
            episodes = play(policy, factories, jobs, width, progress=False)
        finally:
            policy.close()
    total = time.perf_counter() - start
    return {
        "start": started,
        "play": total - started,
        "total": total,
        "episodes": episodes,
    }


def transcript(episode) -> tuple:
    return (
        episode.env,
        episode.task_id,
        tuple((m.role, m.content) for m in episode.messages),
    )


def report(job: str, results: dict[str, dict]) -> list[str]:
    reference = results.get("hf")
    lines = [
        f"## {job}",
        "",
        "| engine | start s | play s | total s | ratio vs hf | solved | turns | same as hf |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for engine, r in results.items():
        episodes = r["episodes"]
        ratio = f"{reference['total'] / r['total']:.2f}" if reference else "-"
        same = "-"
        if reference and job == "eval":
            ours = {transcript(e)[:2]: transcript(e) for e in reference["episodes"]}
            same = sum(ours.get(transcript(e)[:2]) == transcript(e) for e in episodes)
            same = f"{same}/{len(episodes)}"
        solved = sum(e.success for e in episodes)
        turns = sum(e.n_turns for e in episodes)
        lines.append(
            f"| {engine} | {r['start']:.1f} | {r['play']:.1f} | {r['total']:.1f} "
            f"| {ratio} | {solved}/{len(episodes)} | {turns} | {same} |"
        )
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--max-context", type=int, default=2048, help=argparse.SUPPRESS)
    parser.add_argument(
        "--adapter", help="a trained PEFT LoRA folder (a round's global adapter)"
    )
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument(
        "--tasks", type=int, help="test tasks per env (default: the config's)"
    )
    parser.add_argument(
        "--explore", type=int, default=16, help="explored tasks per env"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--dtype", help="every engine's dtype (default: the config's, as resolved here)"
    )
    parser.add_argument("--rank", type=int, default=8, help=argparse.SUPPRESS)
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--engines", default=",".join(ENGINES))
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.max_context, args.dtype, args.rank)
    if not args.adapter:
        parser.error("--adapter is required")
    import torch

    from evoflow.config import load_config
    from evoflow.precision import resolve_dtype

    torch.set_num_threads(args.threads)
    config = load_config(args.config)
    dtype = args.dtype or config["model"]["dtype"]
    dtype = str(resolve_dtype(dtype, "cpu")).removeprefix("torch.")
    config["model"]["dtype"] = dtype  # one dtype for every engine
    lines = [
        f"# engines end to end: {args.config}, adapter {args.adapter}, "
        f"{args.threads} thread(s), {dtype}",
        "",
    ]
    for job in args.jobs.split(","):
        results = {}
        for engine in args.engines.split(","):
            results[engine] = run_engine(engine, config, job, args.adapter, args)
            print(f"{job} {engine}: {results[engine]['total']:.1f} s", flush=True)
        lines += report(job, results)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

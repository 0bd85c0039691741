"""SAGE's workflow jobs, from a rule's settings to the library.

``settings`` (rule params) holds experiment, seed, model and the top-level
``sage`` section; span and evaluation jobs add the method's ``kind`` and
``options`` (``evoflow.methods.sage``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path

from evoflow.atomic import atomic_path, write_json
from evoflow.methods import sage as family
from evoflow.methods.base import Method
from evoflow.methods.registry import KINDS
from evoflow.sage import data, facts, pool, warmup
from evoflow.sage.problems import Problem
from evoflow.store.shards import ShardMeta, write_shard
from evoflow.train.sft_config import SFTConfig

log = logging.getLogger(__name__)


def prepare(settings: dict, pool_file: str | Path, eval_file: str | Path,
            val_file: str | Path | None = None) -> None:  # fmt: skip
    """The seed pool (a pool file), the held-out (test) problems and the
    validation problems (JSON lists of problems; ``evoflow.sage.data``)."""
    config = {"sage": settings["sage"]}
    options = family.data_settings(config)
    seeds = data.seed_problems(options, settings["seed"])
    pool.write(pool.seeded(seeds).entries, pool_file)
    held_out = data.eval_problems(options, settings["seed"])
    validation = data.validation_problems(options, settings["seed"])
    outputs = [(eval_file, held_out)] + ([(val_file, validation)] if val_file else [])
    for path, problems in outputs:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps([asdict(p) for p in problems], indent=1))
    log.info("sage data: %d seed problems, %d validation, %d held out; facts "
             "shared (seed-validation, seed-held out, validation-held out): "
             "%d, %d, %d", len(seeds), len(validation), len(held_out),
             facts.shared(seeds, validation), facts.shared(seeds, held_out),
             facts.shared(validation, held_out))  # fmt: skip


def read_problems(path: str | Path) -> list[Problem]:
    rows = json.loads(Path(path).read_text())
    return [Problem(**{**r, "tests": tuple(r["tests"])}) for r in rows]


def warm_up(settings: dict, pool_file: str | Path, output: str | Path,
            threads: int = 1) -> dict:  # fmt: skip
    """SFT on one demonstration per role and seed problem (``evoflow.sage.warmup``)."""
    from evoflow.runtime import configure_threads
    from evoflow.train.sft_trainer import train_sft

    configure_threads(threads)
    problems = [e.problem for e in pool.read([pool_file]).entries]
    chats = warmup.demos(problems, settings["seed"])
    sft = SFTConfig(seed=settings["seed"], **(settings["sage"].get("warmup") or {}))
    log.info("sage warm-up: %d demonstrations", len(chats))
    return train_sft(chats, settings["model"]["name"], output, sft, progress=True)


def run_span(settings: dict, config_hash: str, method: str, round: int, inputs: dict,
             output: str | Path, threads: int = 1) -> dict:  # fmt: skip
    """Train span ``round`` of a SAGE method; write its folder ``output``."""
    from evoflow.runtime import configure_threads, policy_from_config
    from evoflow.sage.span import SageSpan, run_sage_span
    from evoflow.sage.step import Checker
    from evoflow.train.rl.trainer import Span
    from evoflow.verify import MathVerifier

    configure_threads(threads)
    resolved = _method(method, settings)
    config = family.trainer_config(resolved.options, settings["seed"])
    start, steps = family.span_range(resolved, round)
    span = Span(settings["model"]["name"], settings["experiment"], method, start,
                steps, None, config_hash)  # fmt: skip
    job = SageSpan(span, family.step_settings(resolved.options), family.train_roles(resolved),
                   resolved.options["max_new_tokens"],
                   resolved.options["adapters"])  # fmt: skip
    policy = policy_from_config(settings)
    try:
        with MathVerifier() as maths:
            return run_sage_span(job, config, [Path(p) for p in inputs["pools"]], policy,
                                 Checker(maths), output, previous=inputs.get("previous"),
                                 init_adapter=inputs.get("init"))  # fmt: skip
    finally:
        policy.close()


def evaluate(settings: dict, config_hash: str, method: str, round: int,
             adapter: str | None, eval_file: str | Path, output: dict,
             threads: int = 1) -> dict:  # fmt: skip
    """The Solver's pass@1 on the held-out problems; writes episodes and metrics."""
    from evoflow.runtime import configure_threads, policy_from_config
    from evoflow.sage.evaluate import evaluate_solver
    from evoflow.sage.step import Checker
    from evoflow.verify import MathVerifier

    configure_threads(threads)
    resolved = _method(method, settings)
    labels = {"experiment": settings["experiment"], "method": method,
              "model": settings["model"]["name"], "round": round}  # fmt: skip
    policy = policy_from_config(settings)
    try:
        with MathVerifier() as maths:
            metrics, episodes = evaluate_solver(
                policy, adapter, read_problems(eval_file), Checker(maths),
                resolved.options["eval_max_new_tokens"], labels)  # fmt: skip
    finally:
        policy.close()
    meta = ShardMeta(settings["experiment"], config_hash, settings["model"]["name"],
                     settings["seed"])  # fmt: skip
    write_shard(output["episodes"], episodes, meta)
    write_json(output["metrics"], {**metrics, "round": round, "adapter": adapter})
    return metrics


def _method(name: str, settings: dict) -> Method:
    return Method(name, KINDS[settings["kind"]], 1, 1, SFTConfig(), settings["options"])

"""Choosing the embedded experiment's training settings with a sweep.

``config/calibration.yaml`` names a base experiment config and a list of
trials. A trial overrides the demonstrations per environment (one count, or a
count per env) and the SFT
settings (``learning_rate``, ``epochs``, ``batch_size``, ``max_length``), trains
one adapter on every environment's expert demonstrations pooled (the
Centralized recipe, the cheapest method that sees all the data) and evaluates it
greedily on the base config's VALIDATION tasks (as many per env as its ``test``
count, of its strata), turn caps and generation settings — Table 1's
measurement on tasks that no reported number is made on: a setting chosen here
is never chosen on the test split it is then reported on. A trial with ``demos: 0`` trains nothing and
measures the pre-trained model.

A trial's ``strata`` (env -> strata) draws that env's demonstrations,
validation and exploration tasks from other strata than the base config's.
Two more keys measure what self-evolution needs: ``constrain_actions``
(decode actions from each env's listed ones, ``generation.constrain_actions``)
and ``explore`` (that many training tasks per env played with the trial's
adapter at the base config's temperature, as a Fed-SE client explores; their
successes are what would enter its buffer). Trials that differ only in these
share one trained adapter, kept under the results folder by its settings.

Every finished trial is one line of a JSON-lines file, so a sweep resumes where
it stopped (a trial whose settings are already recorded is skipped), and the
markdown table of all recorded trials is rewritten after each one (between
two marker comments of the report file, so prose around it stays):

    evoflow calibrate config/calibration.yaml
"""

from __future__ import annotations

import datetime
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from evoflow.atomic import atomic_path
from evoflow.config import load_config
from evoflow.envs import configured_factory
from evoflow.errors import ConfigError
from evoflow.evaluate.metrics import episode_metrics
from evoflow.provenance import code_version
from evoflow.report.tables import ENV_ORDER, ENV_TITLES, md_row, pct, row_from_metrics
from evoflow.seeding import choose, derive_seed

log = logging.getLogger(__name__)
TRAIN_KEYS = {"learning_rate", "epochs", "batch_size", "max_length"}
TRIAL_KEYS = {"name", "demos", "constrain_actions", "explore", "strata", *TRAIN_KEYS}
SWEEP_KEYS = {"base", "results", "report", "trials"}
SPLIT = "validation"  # the only split a trial is measured on
BEGIN = "<!-- trials: written by `evoflow calibrate` -->"
END = "<!-- end of trials -->"


def load_sweep(path: str | Path) -> dict[str, Any]:
    """Read and check a sweep file; trial names must be unique."""
    try:
        sweep = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the sweep ({exc})") from None
    if not isinstance(sweep, dict) or set(sweep) != SWEEP_KEYS:
        raise ConfigError(f"{path}: a sweep has exactly the keys {sorted(SWEEP_KEYS)}")
    names = set()
    for k, trial in enumerate(sweep["trials"]):
        where = f"{path}: trials[{k}]"
        if not isinstance(trial, dict) or not {"name", "demos"} <= set(trial):
            raise ConfigError(f"{where}: a trial needs at least 'name' and 'demos'")
        unknown = set(trial) - TRIAL_KEYS
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {sorted(unknown)}; "
                f"a trial sets {sorted(TRIAL_KEYS)}"
            )
        if trial["name"] in names:
            raise ConfigError(f"{where}: trial name {trial['name']!r} is used twice")
        names.add(trial["name"])
    return sweep


def run_sweep(path: str | Path, threads: int = 2) -> list[dict]:
    """Run every trial not yet recorded; rewrite the report; return all records."""
    sweep = load_sweep(path)
    config = load_config(sweep["base"])
    results = Path(sweep["results"])
    done = _records(results)
    for trial in sweep["trials"]:
        if any(r["trial"] == trial for r in done):
            log.info("calibrate: %s already recorded", trial["name"])
            continue
        record = run_trial(config, trial, threads, results.parent)
        results.parent.mkdir(parents=True, exist_ok=True)
        with open(results, "a") as fh:
            fh.write(json.dumps(record) + "\n")
        done.append(record)
        write_report(sweep["report"], done, sweep["base"])
    return done


def run_trial(
    config: dict, trial: dict, threads: int = 2, store: Path | None = None
) -> dict:
    """Train (unless ``demos`` is 0), evaluate and explore one trial; its record.

    ``store`` keeps trained adapters by their settings (None: a temporary folder).
    """
    from evoflow.runtime import configure_threads

    configure_threads(threads)
    config = with_strata(config, trial.get("strata") or {})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        adapter, summary = _trained(config, trial, Path(store or tmp))
        trained = time.perf_counter()
        tested, explored = _measure(config, trial, adapter)
    keys = ("successes", "episodes", "mean_turns", "invalid_action_rate")
    return {
        "trial": trial,
        "optimizer_steps": summary.get("optimizer_steps", 0),
        "episodes_trained": summary.get("episodes", 0),
        "final_loss": summary.get("final_loss"),
        "train_seconds": round(trained - started, 1),
        "eval_seconds": round(time.perf_counter() - trained, 1),
        "metrics": {env: {k: m[k] for k in keys} for env, m in tested.items()},
        "explored": {env: {k: m[k] for k in keys} for env, m in explored.items()},
        "split": SPLIT,
        "run": f"{datetime.date.today().isoformat()} {code_version()}",
    }


def _trained(config: dict, trial: dict, store: Path) -> tuple[str | None, dict]:
    """The trial's adapter and training summary, trained unless already stored."""
    from evoflow.rollout.expert import expert_demos
    from evoflow.train.sft_config import SFTConfig
    from evoflow.train.sft_trainer import train_sft

    envs = config["envs"]
    demos = _demos_per_env(trial["demos"], envs)
    if not any(demos.values()):
        return None, {}
    settings = {**config["train"], **{k: trial[k] for k in TRAIN_KEYS & set(trial)}}
    key = derive_seed(config["model"]["name"], config["seed"], sorted(demos.items()),
                      sorted(settings.items()), sorted(envs.items()))  # fmt: skip
    folder = store / "adapters" / f"{key:016x}"
    if (folder / "summary.json").is_file():
        return str(folder / "adapter"), json.loads(
            (folder / "summary.json").read_text()
        )
    chats = [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for env in envs
        if demos[env]
        for e in expert_demos(
            env,
            demos[env],
            "calibration",
            config["seed"],
            envs[env]["max_turns"],
            envs[env].get("strata"),
        )  # fmt: skip
    ]
    with atomic_path(folder) as tmp:
        tmp.mkdir(parents=True)
        summary = train_sft(chats, config["model"]["name"], str(tmp / "adapter"),
                            SFTConfig(**settings), progress=False)  # fmt: skip
        summary = {**summary, "episodes": len(chats)}
        (tmp / "summary.json").write_text(json.dumps(summary))
    return str(folder / "adapter"), summary


def with_strata(config: dict, strata: dict[str, list[str]]) -> dict:
    """``config`` whose envs draw demonstrations, validation and exploration
    tasks from a trial's ``strata`` (env -> strata; other envs keep theirs)."""
    unknown = set(strata) - set(config["envs"])
    if unknown:
        raise ConfigError(f"calibration: strata for unknown env(s) {sorted(unknown)}")
    envs = {env: {**entry, "strata": list(strata.get(env, entry.get("strata") or []))
                  or None} for env, entry in config["envs"].items()}  # fmt: skip
    return {**config, "envs": envs}


def _measure(config: dict, trial: dict, adapter: str | None) -> tuple[dict, dict]:
    """Greedy validation metrics and, with ``explore``, exploration metrics
    (training tasks) per env. No test task is ever played here."""
    from evoflow.envs import split_ids
    from evoflow.evaluate.run import evaluate_envs
    from evoflow.rollout.engine import Job, play
    from evoflow.runtime import policy_from_config, rollout_spec

    envs = config["envs"]
    generation = {**config["generation"],
                  "constrain_actions": bool(trial.get("constrain_actions", False))}  # fmt: skip
    config = {**config, "generation": generation}

    def spec(env, split, temperature):
        return rollout_spec(config, env, method="calibration", round=1, client=env,
                            split=split, source="eval" if split == SPLIT else "explore",
                            adapter=adapter, temperature=temperature)  # fmt: skip

    policy = policy_from_config(config)
    try:
        tested = evaluate_envs(policy, {env: spec(env, SPLIT, 0.0) for env in envs},
                               envs, generation["width"], SPLIT)  # fmt: skip
        jobs = [Job(env, task, 0, spec(env, "train", None))
                for env in envs for task in choose(split_ids(env, "train", envs[env]["remote"],
                                                             envs[env].get("strata")),
                                                   trial.get("explore", 0), config["seed"],
                                                   "calibration-explore", env)]  # fmt: skip
        factories = {env: configured_factory(env, envs[env]) for env in envs}
        played = play(policy, factories, jobs, generation["width"]) if jobs else []
    finally:
        policy.close()
    explored = {env: episode_metrics([e for e in played if e.env == env])
                for env in envs if trial.get("explore")}  # fmt: skip
    return {env: m for env, (_, m) in tested.items()}, explored


def write_report(path: str | Path, records: list[dict], base: str) -> None:
    """The markdown table of all trials (rates in %, Avg pooled over episodes)."""
    envs = [e for e in ENV_ORDER if any(e in r["metrics"] for r in records)]
    header = ["Trial", "Demos/env", "LR", "Epochs", "Batch", "Constrained", "Steps",
              "Train s", "Eval s", *(ENV_TITLES[e] for e in envs), "Avg", "Invalid %",
              "Explored", "Measured on", "Run"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for r in records:
        t = r["trial"]
        row = row_from_metrics(t["name"], t["name"], r["metrics"])
        demos = t["demos"] if isinstance(t["demos"], int) else "/".join(
            str(t["demos"].get(e, 0)) for e in envs)  # fmt: skip
        lines.append(md_row([t["name"], str(demos), str(t.get("learning_rate", "")),
                             str(t.get("epochs", "")), str(t.get("batch_size", "")),
                             "yes" if t.get("constrain_actions") else "no",
                             str(r["optimizer_steps"]), f"{r['train_seconds']:.0f}",
                             f"{r['eval_seconds']:.0f}", *(pct(row.rate(e)) for e in envs),
                             pct(row.pooled), pct(row.invalid_pct),
                             _explored(r.get("explored") or {}, envs),
                             r.get("split", "test"), r.get("run", "–")]))  # fmt: skip
    table = f"{BEGIN}\n<!-- base config: {base} -->\n" + "\n".join(lines) + f"\n{END}"
    path = Path(path)
    text = path.read_text() if path.is_file() else ""
    if BEGIN in text and END in text:  # keep the prose around the table
        head, rest = text.split(BEGIN, 1)
        text = head + table + rest.split(END, 1)[1]
    else:
        text = table + "\n"
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def _explored(explored: dict, envs: list[str]) -> str:
    """Exploration successes per env (in table order) and in all, e.g. ``3/0/1 (4/48)``."""
    if not explored:
        return "–"
    per_env = "/".join(
        str(explored[e]["successes"]) if e in explored else "–" for e in envs
    )
    wins = sum(m["successes"] for m in explored.values())
    played = sum(m["episodes"] for m in explored.values())
    return f"{per_env} ({wins}/{played})"


def _demos_per_env(demos: int | dict, envs: dict) -> dict[str, int]:
    """A trial's ``demos``: one count for every env, or a count per env."""
    if isinstance(demos, int):
        return {env: demos for env in envs}
    unknown = set(demos) - set(envs)
    if unknown:
        raise ConfigError(f"calibration: demos for unknown env(s) {sorted(unknown)}")
    return {env: int(demos.get(env, 0)) for env in envs}


def _records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

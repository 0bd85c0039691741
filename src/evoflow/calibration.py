"""Choosing the embedded experiment's training settings with a sweep.

``config/calibration.yaml`` names a base experiment config and a list of
trials. A trial overrides the demonstrations per environment (one count, or a
count per env) and the SFT
settings (``learning_rate``, ``epochs``, ``batch_size``, ``max_length``), trains
one adapter on every environment's expert demonstrations pooled (the
Centralized recipe, the cheapest method that sees all the data) and evaluates it
greedily on the base config's test tasks, turn caps and generation settings —
the same measurement Table 1 makes. A trial with ``demos: 0`` trains nothing and
measures the pre-trained model.

Every finished trial is one line of a JSON-lines file, so a sweep resumes where
it stopped (a trial whose settings are already recorded is skipped), and the
markdown table of all recorded trials is rewritten after each one (between
two marker comments of the report file, so prose around it stays):

    evoflow calibrate config/calibration.yaml
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from evoflow.atomic import atomic_path
from evoflow.config import load_config
from evoflow.errors import ConfigError
from evoflow.report.tables import ENV_ORDER, ENV_TITLES, md_row, pct, row_from_metrics

log = logging.getLogger(__name__)
TRIAL_KEYS = {"name", "demos", "learning_rate", "epochs", "batch_size", "max_length"}
SWEEP_KEYS = {"base", "results", "report", "trials"}
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
        record = run_trial(config, trial, threads)
        results.parent.mkdir(parents=True, exist_ok=True)
        with open(results, "a") as fh:
            fh.write(json.dumps(record) + "\n")
        done.append(record)
        write_report(sweep["report"], done, sweep["base"])
    return done


def run_trial(config: dict, trial: dict, threads: int = 2) -> dict:
    """Train (unless ``demos`` is 0) and evaluate one trial; return its record."""
    from evoflow.evaluate.run import evaluate_envs
    from evoflow.rollout.expert import expert_demos
    from evoflow.runtime import configure_threads, policy_from_config, rollout_spec
    from evoflow.train.sft_config import SFTConfig
    from evoflow.train.sft_trainer import train_sft

    configure_threads(threads)
    envs = config["envs"]
    started = time.perf_counter()
    demos = _demos_per_env(trial["demos"], envs)
    chats = [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for env in envs
        if demos[env]
        for e in expert_demos(
            env, demos[env], "calibration", config["seed"], envs[env]["max_turns"]
        )  # fmt: skip
    ]
    settings = {**config["train"], **{k: trial[k] for k in trial if k in TRIAL_KEYS - {"name", "demos"}}}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        adapter, summary = None, {}
        if chats:
            adapter = str(Path(tmp) / "adapter")
            summary = train_sft(chats, config["model"]["name"], adapter,
                                SFTConfig(**settings), progress=False)  # fmt: skip
        trained = time.perf_counter()
        specs = {env: rollout_spec(config, env, method="calibration", round=1, client=env,
                                   split="test", source="eval", adapter=adapter,
                                   temperature=0.0) for env in envs}  # fmt: skip
        policy = policy_from_config(config)
        try:
            results = evaluate_envs(policy, specs, {e: envs[e]["test"] for e in envs},
                                    {e: envs[e]["remote"] for e in envs},
                                    config["generation"]["width"])  # fmt: skip
        finally:
            policy.close()
    metrics = {env: m for env, (_, m) in results.items()}
    return {
        "trial": trial,
        "optimizer_steps": summary.get("optimizer_steps", 0),
        "episodes_trained": len(chats),
        "final_loss": summary.get("final_loss"),
        "train_seconds": round(trained - started, 1),
        "eval_seconds": round(time.perf_counter() - trained, 1),
        "metrics": {
            env: {
                k: m[k]
                for k in ("successes", "episodes", "mean_turns", "invalid_action_rate")
            }
            for env, m in metrics.items()
        },  # fmt: skip
    }


def write_report(path: str | Path, records: list[dict], base: str) -> None:
    """The markdown table of all trials (rates in %, Avg pooled over episodes)."""
    envs = [e for e in ENV_ORDER if any(e in r["metrics"] for r in records)]
    header = ["Trial", "Demos/env", "LR", "Epochs", "Batch", "Steps", "Train s",
              "Eval s", *(ENV_TITLES[e] for e in envs), "Avg", "Invalid %"]  # fmt: skip
    lines = [md_row(header), md_row(["---"] * len(header))]
    for r in records:
        t = r["trial"]
        row = row_from_metrics(t["name"], t["name"], r["metrics"])
        demos = t["demos"] if isinstance(t["demos"], int) else "/".join(
            str(t["demos"].get(e, 0)) for e in envs)  # fmt: skip
        lines.append(md_row([t["name"], str(demos), str(t.get("learning_rate", "")),
                             str(t.get("epochs", "")), str(t.get("batch_size", "")),
                             str(r["optimizer_steps"]), f"{r['train_seconds']:.0f}",
                             f"{r['eval_seconds']:.0f}", *(pct(row.rate(e)) for e in envs),
                             pct(row.pooled), pct(row.invalid_pct)]))  # fmt: skip
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

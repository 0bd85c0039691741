"""A study: one experiment config run once per fresh seed, and the claims it tests.

A config under ``config/study/`` is an ordinary experiment plus a ``study``
section: the seeds (never ones used to choose a setting) and the paper's claims
it measures, each a pair of methods and the direction the paper reports (a
side is a method's final evaluation, or ``method@round`` for an earlier one,
such as the start it trained from)::

    study:
      seeds: [100, 101, 102, 103, 104]
      claims:
        - {claim: "Fed-SE beats FedIT", a: fedse, b: fedit, direction: greater}

``evoflow study <config>`` runs the workflow once per seed, each as the
experiment ``<experiment>-s<seed>`` (its own results and report folders), and
records each seed's wall time and the machine it ran on in
``reports/<experiment>/study.json``; ``--seeds`` runs some of them (a study
split over sittings or machines);
``evoflow phenomena`` pools the seeds' reports per claim
(``evoflow.report.phenomena``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from evoflow.atomic import write_json
from evoflow.config import load_config
from evoflow.errors import ConfigError

log = logging.getLogger(__name__)
DIRECTIONS = ("greater", "less")
RECORD = "study.json"
CHECKPOINT = 60.0  # seconds between saves of a running seed's time


@dataclass(frozen=True)
class Claim:
    """A paper's claim: method ``a`` ahead of (or behind) method ``b``."""

    claim: str
    a: str
    b: str
    direction: str = "greater"


@dataclass(frozen=True)
class Study:
    """A study config's name, seeds and claims."""

    experiment: str
    seeds: tuple[int, ...]
    claims: tuple[Claim, ...]

    def experiment_of(self, seed: int) -> str:
        return f"{self.experiment}-s{seed}"

    def report(self, seed: int, reports: str | Path = "reports") -> Path:
        return Path(reports) / self.experiment_of(seed)

    def record(self, reports: str | Path = "reports") -> Path:
        return Path(reports) / self.experiment / RECORD


def study_of(config: dict, source: str = "config") -> Study:
    """The ``study`` section of a validated config, its names checked."""
    section = config.get("study")
    if not section and (config.get("helmsman") or {}).get("study"):
        raise ConfigError(
            f"{source}: Helmsman's baseline study runs its seeds inside one experiment "
            f"(snakemake --profile workflow/profiles/local --configfile {source}) and "
            "has no claims; `evoflow phenomena` reports it, `evoflow study` does not run it"
        )
    if not section:
        raise ConfigError(f"{source}: no 'study' section (seeds and claims)")
    seeds = tuple(section["seeds"])
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{source}: key 'study.seeds': {list(seeds)} repeats a seed")
    if config["seed"] in seeds:
        raise ConfigError(
            f"{source}: key 'study.seeds': seed {config['seed']} is the config's own "
            "seed; a study draws fresh seeds"
        )
    claims = []
    for i, entry in enumerate(section["claims"]):
        claim = Claim(**entry)
        for side in (claim.a, claim.b):
            method, at, round = side.partition("@")
            if method not in config["methods"]:
                raise ConfigError(
                    f"{source}: key 'study.claims[{i}]': {method!r} is not a configured "
                    f"method ({', '.join(config['methods'])})"
                )
            if at and not re.fullmatch(r"0|[1-9][0-9]*", round):
                raise ConfigError(
                    f"{source}: key 'study.claims[{i}]': {side!r} names no round "
                    "(method@round, the round a number as reports write it: agentevol@0)"
                )
        claims.append(claim)
    return Study(config["experiment"], seeds, tuple(claims))


def run_study(
    path: str | Path,
    cores: int = 2,
    reports: str | Path = "reports",
    seeds: tuple[int, ...] | None = None,
) -> dict:
    """Run the workflow once per seed of the study config at ``path`` (or only
    ``seeds``, some of them); record and return each seed's wall time and the
    machines it ran on (``machine()``; two where a resumed seed moved). A seed
    with nothing left to do (a Snakemake dry run says so) that the record
    already timed is not run again and keeps its time, so a resumed study
    reports what each seed cost, not the seconds a finished seed takes to
    check. A seed's running time is
    saved every ``CHECKPOINT`` seconds under ``partial``, so when a seed is
    interrupted (stopped, killed, a restart) and resumed, its time is the sum
    of its attempts, less at most one interval per interruption."""
    config = load_config(path)
    study = study_of(config, str(path))
    record = {"config": str(path), **_timed(study, path, reports)}
    for seed in _chosen(study, seeds, str(path)):
        command = [sys.executable, "-m", "snakemake", "--profile", "workflow/profiles/local",
                   "--cores", str(cores), "--configfile", str(path), "--config",
                   f"seed={seed}", f"experiment={study.experiment_of(seed)}"]  # fmt: skip
        if str(seed) in record["seeds"] and _finished(command):
            log.info("study %s: seed %d finished before", study.experiment, seed)
            continue
        log.info("study %s: seed %d", study.experiment, seed)
        _note_machine(record, str(seed))
        returncode = _run_timed(command, str(seed), record, study.record(reports))
        if returncode != 0:
            raise RuntimeError(f"study {study.experiment}: seed {seed} failed "
                               f"(snakemake exit {returncode})")  # fmt: skip
        record["seeds"][str(seed)] = record["partial"].pop(str(seed))
        write_json(study.record(reports), record)
    return record


def _run_timed(command: list[str], seed: str, record: dict, out: Path) -> int:
    """Run one seed's Snakemake, adding its running time to
    ``record['partial'][seed]`` (written to ``out`` every ``CHECKPOINT`` s)."""
    earlier = float(record["partial"].get(seed, 0.0))
    started = time.perf_counter()

    def save() -> None:
        record["partial"][seed] = round(earlier + time.perf_counter() - started, 1)
        write_json(out, record)

    process = subprocess.Popen(command)
    try:
        while True:
            try:
                return process.wait(timeout=CHECKPOINT)
            except subprocess.TimeoutExpired:
                save()
    finally:
        if process.poll() is None:  # interrupted here: Snakemake saw the same
            try:  # signal, so let it finish its own clean-up before stopping it
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.terminate()
                process.wait()
        save()


def _note_machine(record: dict, seed: str) -> None:
    """Add this machine to the seed's; a seed started afresh (no partial time
    kept) forgets the machines of a time it no longer counts."""
    ran_on = record["machines"].get(seed, []) if seed in record["partial"] else []
    here = machine()
    record["machines"][seed] = ran_on if here in ran_on else [*ran_on, here]


def _chosen(
    study: Study, seeds: tuple[int, ...] | None, source: str
) -> tuple[int, ...]:
    """The study's seeds to run: all, or ``seeds`` where each is one of them."""
    if seeds is None:
        return study.seeds
    unknown = [s for s in seeds if s not in study.seeds]
    if unknown:
        raise ConfigError(
            f"{source}: --seeds {' '.join(map(str, unknown))}: not among "
            f"the study's seeds ({', '.join(map(str, study.seeds))})"
        )
    return tuple(s for s in study.seeds if s in seeds)


def machine() -> str:
    """This machine in a few words: the CPU's model name, the cores this
    process may use and whether it multiplies bf16 in hardware (``amx_bf16``
    or ``avx512_bf16``), as ``/proc/cpuinfo`` tells them (``unknown CPU``
    where it tells nothing)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    name = re.search(r"^model name\s*:\s*(.+)$", text, flags=re.MULTILINE)
    flags = re.search(r"^flags\s*:(.*)$", text, flags=re.MULTILINE)
    flags = set(flags[1].split()) if flags else set()
    bf16 = next((f for f in ("amx_bf16", "avx512_bf16") if f in flags), "no bf16 units")
    name = name[1].strip() if name else "unknown CPU"
    return f"{name}, {len(os.sched_getaffinity(0))} cores, {bf16}"


def _timed(study: Study, path: str | Path, reports: str | Path) -> dict[str, dict]:
    """The seeds' times (finished, and partial) and machines a record of this
    config holds."""
    found = study.record(reports)
    earlier = json.loads(found.read_text()) if found.is_file() else {}
    if Path(earlier.get("config", "")).resolve() != Path(path).resolve():
        return {"seeds": {}, "partial": {}, "machines": {}}
    return {key: dict(earlier.get(key, {})) for key in ("seeds", "partial", "machines")}


def _finished(command: list[str]) -> bool:
    """Whether Snakemake has nothing to do for ``command`` (a dry run)."""
    dry = subprocess.run([*command, "--dry-run"], check=False, capture_output=True,
                         text=True)  # fmt: skip
    return dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr


def wall_seconds(study: Study, reports: str | Path = "reports") -> dict[int, float]:
    """Each finished seed's wall time from the study record ({} without one)."""
    path = study.record(reports)
    if not path.is_file():
        return {}
    seeds = json.loads(path.read_text()).get("seeds", {})
    return {int(s): float(t) for s, t in seeds.items()}

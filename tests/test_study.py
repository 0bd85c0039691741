"""The study configs and `evoflow study`: each the same experiment as the
config it studies, fresh seeds, one Snakemake run per seed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evoflow.config import load_config
from evoflow.errors import ConfigError
from evoflow.study import machine, run_study, study_of, wall_seconds

STUDY = "config/study/fedse.yaml"


def test_the_study_is_the_embedded_default_under_fresh_seeds():
    # Prepare
    default, study = load_config("config/config.yaml"), load_config(STUDY)

    # Execute / Assert: everything but the name, the study section, the
    # methods and which rounds are evaluated is the default's; each method is
    # one of the default's, unchanged; the claims' round is the default's last
    kept = ("experiment", "study", "methods", "fed")
    assert {k: v for k, v in study.items() if k not in kept} == {
        k: v for k, v in default.items() if k not in kept
    }
    evaluated = ("eval_stride", "eval_first")
    assert {k: v for k, v in study["fed"].items() if k not in evaluated} == {
        k: v for k, v in default["fed"].items() if k not in evaluated
    }
    assert study["fed"]["eval_first"] is False
    assert study["fed"]["eval_stride"] == default["fed"]["rounds"]
    for name, entry in study["methods"].items():
        assert entry == default["methods"][name], name
    assert {"fedse", "fedit", "fedit_matched", "random"} <= set(study["methods"])
    seeds = study_of(study, STUDY).seeds
    assert len(seeds) >= 5
    for used in (0, 1, 1000, 1001, default["seed"]):  # seeds that chose settings
        assert used not in seeds


def test_the_sage_study_is_the_sage_config_against_its_seed_pool_control():
    base, study = load_config("config/sage.yaml"), load_config("config/study/sage.yaml")
    kept = ("experiment", "study", "methods", "fed")
    assert {k: v for k, v in study.items() if k not in kept} == {
        k: v for k, v in base.items() if k not in kept
    }
    assert study["fed"] == {**base["fed"], "eval_stride": 2}  # rounds 0 and 2
    assert study["methods"] == {"sage": {}, "sage_seed_pool": {}}
    found = study_of(study, "config/study/sage.yaml")
    assert [(c.a, c.b, c.direction) for c in found.claims] == [
        ("sage", "sage_seed_pool", "greater"),
        # added after the study ran: each arm against the warm-up it starts from
        ("sage", "sage@0", "greater"),
        ("sage_seed_pool", "sage_seed_pool@0", "greater"),
    ]
    assert len(found.seeds) >= 5 and base["seed"] not in found.seeds


def test_the_agentevol_study_is_its_config_against_bc_and_the_matched_control():
    base = load_config("config/agentevol.yaml")
    study = load_config("config/study/agentevol.yaml")
    kept = ("experiment", "study", "methods", "fed")
    assert {k: v for k, v in study.items() if k not in kept} == {
        k: v for k, v in base.items() if k not in kept
    }
    assert study["fed"] == {**base["fed"], "eval_stride": 2}
    assert study["methods"] == {"agenttraj_sft": {}, "agentevol": {},
                                "agenttraj_sft_matched": {}}  # fmt: skip
    found = study_of(study, "config/study/agentevol.yaml")
    assert [(c.a, c.b) for c in found.claims] == [
        ("agentevol", "agenttraj_sft"),
        ("agentevol", "agenttraj_sft_matched"),
        # added after the study ran: the first claim split at the base agent
        ("agentevol", "agentevol@0"),
        ("agentevol@0", "agenttraj_sft"),
    ]
    assert len(found.seeds) >= 5 and base["seed"] not in found.seeds


def test_the_rl_study_names_its_estimator_and_matches_the_interaction_budget():
    base = load_config("config/agentgym_rl.yaml")
    study = load_config("config/study/agentgym_rl.yaml")
    kept = ("experiment", "study", "methods", "fed", "rl")
    assert {k: v for k, v in study.items() if k not in kept} == {
        k: v for k, v in base.items() if k not in kept
    }
    trainer = dict(study["rl"]["trainer"])
    assert trainer.pop("estimator") == "grpo"
    assert {**study["rl"], "trainer": trainer} == base["rl"]
    methods = study["methods"]
    assert methods["scalinginter_rl"] == base["methods"]["scalinginter_rl"]
    assert methods["agenttraj_sft"] == base["methods"]["agenttraj_sft"]
    # the same most turns per sampled episode: ScalingInter's phases against
    # the fixed short horizon's steps
    rl = study["rl"]
    phases = [rl["phase_steps"]] * (len(rl["horizons"]) - 1)
    phases.append(rl["steps"] - sum(phases))
    growing = sum(h * n for h, n in zip(rl["horizons"], phases, strict=True))
    fixed = methods["fixed_short_matched"]["rl"]
    assert fixed["horizon"] * fixed["steps"] == growing == 24
    found = study_of(study, "config/study/agentgym_rl.yaml")
    assert [(c.a, c.b) for c in found.claims] == [
        ("scalinginter_rl", "agenttraj_sft"),
        ("scalinginter_rl", "fixed_short_matched"),
    ]
    assert len(found.seeds) >= 5 and base["seed"] not in found.seeds


def test_the_rl_tuning_config_is_the_study_on_validation_tasks_with_one_change_a_variant():
    study = load_config("config/study/agentgym_rl.yaml")
    tuning = load_config("config/tuning/agentgym_rl.yaml")
    for key in ("model", "generation", "envs", "train", "rl", "fed"):
        assert tuning[key] == study[key], f"{key} differs from the study's"
    assert tuning["evaluation"]["split"] == "validation"
    assert study["evaluation"]["split"] == "test"
    used = {
        study["seed"],
        *study_of(study).seeds,
        load_config("config/agentgym_rl.yaml")["seed"],
    }
    assert tuning["seed"] not in used
    methods = tuning["methods"]
    assert methods["scalinginter_rl"] == study["methods"]["scalinginter_rl"]
    trainer = study["rl"]["trainer"]
    for name, entry in methods.items():
        if name in ("agenttraj_sft", "scalinginter_rl"):
            continue
        assert entry["kind"] == "scalinginter_rl" and set(entry) == {"kind", "rl"}
        assert set(entry["rl"]["trainer"]) <= set(trainer), f"{name} adds a setting"
        changed = {k for k, v in entry["rl"]["trainer"].items() if trainer[k] != v}
        assert set(entry["rl"]) == {"trainer"} and len(changed) == 1, name


def test_the_helmsman_study_is_its_benchmark_over_fresh_partition_seeds():
    base = load_config("config/helmsman.yaml")
    study = load_config("config/study/helmsman.yaml")
    assert {k: v for k, v in study.items() if k not in ("experiment", "helmsman")} == {
        k: v for k, v in base.items() if k not in ("experiment", "helmsman")
    }
    bench, fresh = base["helmsman"]["bench"], study["helmsman"]["bench"]
    assert {k: v for k, v in fresh.items() if k != "seeds"} == {
        k: v for k, v in bench.items() if k != "seeds"
    }
    assert len(fresh["seeds"]) >= 3 and not set(fresh["seeds"]) & set(bench["seeds"])
    assert study["helmsman"]["agents"] is None  # baselines only
    assert study["helmsman"]["tasks"] == base["helmsman"]["tasks"]  # all 16
    # marked as a study (evoflow phenomena reports it); its base is not one
    assert study["helmsman"]["study"] and not base["helmsman"]["study"]


class FakeSnakemake:
    """Stands in for ``subprocess.Popen`` of one seed's Snakemake: exits with
    ``code`` after ``checkpoints`` waits have timed out; ``interrupt`` makes
    the last wait raise KeyboardInterrupt instead (Ctrl-C)."""

    calls: list[list[str]] = []

    def __init__(self, command, code=0, checkpoints=0, interrupt=False):
        self.command, self.code, self.left = command, code, checkpoints
        self.interrupt, self.returncode = interrupt, None
        FakeSnakemake.calls.append(command)

    def wait(self, timeout=None):
        if self.left > 0:
            self.left -= 1
            raise subprocess.TimeoutExpired(self.command, timeout)
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        self.returncode = self.code
        return self.code

    def poll(self):
        return self.returncode

    def terminate(self):
        self.code = -15


def fake_snakemake(monkeypatch, **kwargs):
    FakeSnakemake.calls = []
    monkeypatch.setattr("evoflow.study.subprocess.Popen",
                        lambda command: FakeSnakemake(command, **kwargs))  # fmt: skip
    return FakeSnakemake.calls


def fake_clock(monkeypatch, step):
    """``time.perf_counter`` advancing ``step`` seconds per call."""
    now = [0.0]

    def tick():
        now[0] += step
        return now[0]

    monkeypatch.setattr("evoflow.study.time.perf_counter", tick)


def test_study_runs_snakemake_once_per_seed_under_its_own_name(tmp_path, monkeypatch):
    # Prepare: Snakemake's process is replaced by a recorder
    calls = fake_snakemake(monkeypatch)

    # Execute
    record = run_study(STUDY, cores=3, reports=tmp_path)

    # Assert
    seeds = study_of(load_config(STUDY)).seeds
    assert [c[c.index("--config") + 1 :] for c in calls] == [
        [f"seed={s}", f"experiment=study-fedse-s{s}"] for s in seeds
    ]
    assert all(c[c.index("--cores") + 1] == "3" for c in calls)
    assert sorted(record["seeds"]) == sorted(str(s) for s in seeds)
    assert record["partial"] == {}
    assert set(wall_seconds(study_of(load_config(STUDY)), tmp_path)) == set(seeds)
    assert (Path(tmp_path) / "study-fedse" / "study.json").is_file()


def test_a_failed_seed_stops_the_study_and_names_it(tmp_path, monkeypatch):
    fake_snakemake(monkeypatch, code=1)
    try:
        run_study(STUDY, reports=tmp_path)
    except RuntimeError as error:
        assert "seed 100 failed" in str(error)
    else:
        raise AssertionError("a failed seed went unnoticed")


def test_an_interrupted_seed_keeps_its_time_and_adds_the_resumed_run(
    tmp_path, monkeypatch
):
    # Prepare: the clock moves 10 s per reading. Seed 100's first attempt: two
    # checkpoints, then Ctrl-C.
    fake_clock(monkeypatch, 10.0)
    fake_snakemake(monkeypatch, checkpoints=2, interrupt=True)
    study = study_of(load_config(STUDY))

    # Execute: the first attempt, interrupted
    try:
        run_study(STUDY, reports=tmp_path)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interruption was swallowed")
    saved = json.loads(study.record(tmp_path).read_text())

    # Assert: readings at 10 (start), 20 and 30 (checkpoints), 40 (stopped):
    # 30 s saved as partial, no seed finished
    assert saved["partial"] == {"100": 30.0} and saved["seeds"] == {}

    # Execute: the study resumed, every seed finishing after one checkpoint
    fake_clock(monkeypatch, 10.0)
    fake_snakemake(monkeypatch, checkpoints=1)
    result = run_study(STUDY, reports=tmp_path)

    # Assert: each seed 20 s (start 10, checkpoint 20, end 30), seed 100 its
    # 30 s before the interruption more
    assert result["seeds"]["100"] == 50.0
    assert all(result["seeds"][str(s)] == 20.0 for s in study.seeds[1:])
    assert result["partial"] == {}
    assert wall_seconds(study, tmp_path)[100] == 50.0


def test_a_resumed_study_keeps_the_times_of_seeds_that_had_finished(
    tmp_path, monkeypatch
):
    # Prepare: seed 100 ran before (600 s) and has nothing left to do; seed 101
    # was timed too but a file of it is missing, so its dry run plans a job
    study = study_of(load_config(STUDY))
    record = study.record(tmp_path)
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"config": STUDY, "seeds": {"100": 600.0,
                                                             "101": 500.0}}))  # fmt: skip

    def dry_run(command, check, **kwargs):
        seed = command[command.index("--config") + 1]
        out = "Nothing to be done" if seed == "seed=100" else "Job stats: 1 job"
        return subprocess.CompletedProcess(command, 0, stdout=out, stderr="")

    monkeypatch.setattr("evoflow.study.subprocess.run", dry_run)
    calls = fake_snakemake(monkeypatch)

    # Execute
    result = run_study(STUDY, reports=tmp_path)

    # Assert: seed 100 not run, its time kept; every other seed run and retimed
    runs = [c[c.index("--config") + 1] for c in calls]
    assert runs == [f"seed={s}" for s in study.seeds if s != 100]
    assert result["seeds"]["100"] == 600.0
    assert result["seeds"]["101"] < 60  # the fake run's time, not the old 500
    assert wall_seconds(study, tmp_path)[100] == 600.0


def test_seeds_runs_only_those_and_keeps_the_other_seeds_times(tmp_path, monkeypatch):
    # Prepare: seeds 100 and 101 were run in an earlier sitting on another
    # machine (their reports copied back under tmp_path)
    study = study_of(load_config(STUDY))
    record = study.record(tmp_path)
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({
        "config": STUDY, "seeds": {"100": 3600.0, "101": 3500.0},
        "machines": {"100": ["Other CPU, 2 cores, amx_bf16"],
                     "101": ["Other CPU, 2 cores, amx_bf16"]}}))  # fmt: skip
    calls = fake_snakemake(monkeypatch)
    monkeypatch.setattr(
        "evoflow.study.machine", lambda: "This CPU, 2 cores, no bf16 units"
    )

    # Execute: the rest, named out of order
    run_study(STUDY, reports=tmp_path, seeds=(104, 102, 103))

    # Assert: only those run, in the study's order; each finished seed has a
    # time and the machine it ran on
    assert [c[c.index("--config") + 1] for c in calls] == [
        "seed=102",
        "seed=103",
        "seed=104",
    ]
    assert set(wall_seconds(study, tmp_path)) == set(study.seeds)
    assert wall_seconds(study, tmp_path)[100] == 3600.0
    saved = json.loads(record.read_text())
    assert saved["machines"]["100"] == ["Other CPU, 2 cores, amx_bf16"]
    assert saved["machines"]["103"] == ["This CPU, 2 cores, no bf16 units"]


def test_seeds_outside_the_study_are_named(tmp_path, monkeypatch):
    calls = fake_snakemake(monkeypatch)
    message = r"--seeds 7: not among the study's seeds \(100, 101, 102, 103, 104\)"
    with pytest.raises(ConfigError, match=message):
        run_study(STUDY, reports=tmp_path, seeds=(101, 7))
    assert calls == []


def test_a_record_is_kept_whatever_spelling_of_the_config_path(tmp_path, monkeypatch):
    # Prepare: seed 100 recorded under "config/study/fedse.yaml"; seed 101 was
    # timed on another machine but its files are gone, so it starts afresh
    study = study_of(load_config(STUDY))
    study.record(tmp_path).parent.mkdir(parents=True)
    study.record(tmp_path).write_text(json.dumps({
        "config": STUDY, "seeds": {"100": 600.0, "101": 500.0},
        "machines": {"100": ["Old CPU"], "101": ["Old CPU"]}}))  # fmt: skip
    monkeypatch.setattr(
        "evoflow.study._finished", lambda command: "seed=100" in command
    )
    monkeypatch.setattr("evoflow.study.machine", lambda: "New CPU")
    fake_snakemake(monkeypatch)

    # Execute: the same config named another way
    run_study(f"./{STUDY}", reports=tmp_path, seeds=(100, 101))

    # Assert: seed 100's time and machine kept; seed 101 retimed, on this machine only
    saved = json.loads(study.record(tmp_path).read_text())
    assert saved["seeds"]["100"] == 600.0 and saved["machines"]["100"] == ["Old CPU"]
    assert saved["seeds"]["101"] < 60 and saved["machines"]["101"] == ["New CPU"]


def test_machine_reads_the_model_name_cores_and_bf16_units(monkeypatch):
    cpuinfo = ("processor\t: 0\nmodel name\t: AMD EPYC\n"
               "flags\t\t: fpu sse avx2 avx512f avx512_bf16\n\n"
               "processor\t: 1\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx512_bf16\n")  # fmt: skip
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: cpuinfo
                        if str(self) == "/proc/cpuinfo" else real(self, *a, **k))  # fmt: skip
    monkeypatch.setattr("evoflow.study.os.cpu_count", lambda: 2)

    assert machine() == "AMD EPYC, 2 cores, avx512_bf16"

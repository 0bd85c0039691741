from __future__ import annotations

from evoflow.config import validate_config
from evoflow.methods import POOLED, methods_from_config
from evoflow.seeding import derive_seed


def resolved(seed: int = 7) -> dict:
    config = validate_config(
        {
            "experiment": "x",
            "seed": seed,
            "envs": {"maze": {}, "wordle": {}},
            "train": {"learning_rate": 1.0e-3},
            "methods": {"fedse": {}, "local": {}, "centralized": {}},
        }
    )
    return methods_from_config(config)


def test_each_training_job_gets_its_own_sft_seed():
    # Prepare
    methods = resolved(seed=7)
    fedse, local = methods["fedse"], methods["local"]

    # Execute
    seeds = {
        (name, round, client): methods[name].sft_for(round, client).seed
        for name, round, client in [
            ("fedse", 1, "maze"),
            ("fedse", 1, "wordle"),
            ("fedse", 2, "maze"),
            ("fedse", 2, "wordle"),
            ("local", 1, "maze"),
            ("local", 1, "wordle"),
            ("centralized", 1, POOLED),
        ]
    }

    # Assert: (experiment seed, round, client) decide it, worked out by hand
    assert seeds[("fedse", 2, "maze")] == derive_seed(7, "sft", 2, "maze")
    assert seeds[("fedse", 2, "wordle")] == derive_seed(7, "sft", 2, "wordle")
    assert seeds[("local", 1, "maze")] == derive_seed(7, "sft", 1, "maze")
    assert seeds[("centralized", 1, POOLED)] == derive_seed(7, "sft", 1, "pooled")
    # round 1 of a federated method: one fresh LoRA init shared by all clients
    shared = derive_seed(7, "sft", 1, "all-clients")
    assert seeds[("fedse", 1, "maze")] == seeds[("fedse", 1, "wordle")] == shared
    assert len(set(seeds.values())) == 6
    # only the seed changes; the method's own settings stay as configured
    job = fedse.sft_for(2, "maze")
    assert job.learning_rate == 1.0e-3 and job.lora_r == 8
    assert fedse.sft.seed == 7 and local.sft.seed == 7


def test_methods_are_paired_their_jobs_share_seeds():
    # Prepare: two federated methods of one experiment
    config = validate_config(
        {
            "experiment": "x",
            "seed": 3,
            "envs": {"maze": {}, "wordle": {}},
            "methods": {"fedse": {}, "fedit": {}, "mine": {"kind": "fedit"}},
        }
    )
    methods = methods_from_config(config)

    # Execute
    seeds = {
        name: [methods[name].sft_for(r, env).seed for r in (1, 2) for env in ("maze",)]
        for name in methods
    }

    # Assert: the same round and client train with the same seed in every method
    assert seeds["fedse"] == seeds["fedit"] == seeds["mine"]


def test_sft_seeds_follow_the_experiment_seed():
    # Prepare / Execute
    first = resolved(seed=7)["fedse"].sft_for(2, "maze").seed
    again = resolved(seed=7)["fedse"].sft_for(2, "maze").seed
    other = resolved(seed=8)["fedse"].sft_for(2, "maze").seed

    # Assert
    assert first == again != other

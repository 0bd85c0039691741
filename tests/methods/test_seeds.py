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

    # Assert: (experiment seed, method, round, client) decide it
    assert seeds[("fedse", 2, "maze")] == derive_seed(7, "sft", "fedse", 2, "maze")
    assert seeds[("fedse", 2, "wordle")] == derive_seed(7, "sft", "fedse", 2, "wordle")
    assert seeds[("local", 1, "maze")] == derive_seed(7, "sft", "local", 1, "maze")
    assert seeds[("centralized", 1, POOLED)] == derive_seed(
        7, "sft", "centralized", 1, "pooled"
    )
    # round 1 of a federated method: one fresh LoRA init shared by all clients
    shared = derive_seed(7, "sft", "fedse", 1, "all-clients")
    assert seeds[("fedse", 1, "maze")] == seeds[("fedse", 1, "wordle")] == shared
    assert len(set(seeds.values())) == 6
    # only the seed changes; the method's own settings stay as configured
    job = fedse.sft_for(2, "maze")
    assert job.learning_rate == 1.0e-3 and job.lora_r == 8
    assert fedse.sft.seed == 7 and local.sft.seed == 7


def test_sft_seeds_follow_the_experiment_seed():
    # Prepare / Execute
    first = resolved(seed=7)["fedse"].sft_for(2, "maze").seed
    again = resolved(seed=7)["fedse"].sft_for(2, "maze").seed
    other = resolved(seed=8)["fedse"].sft_for(2, "maze").seed

    # Assert
    assert first == again != other

# Config validation (before any job runs), shared paths and target lists.
from evoflow.config import config_hash, validate_config

# Fill defaults in place so every rule sees the same resolved config; a wrong
# key, type or value stops the workflow here with a message naming the key.
_resolved = validate_config(config, source=", ".join(map(str, workflow.configfiles)) or "config")
config.clear()
config.update(_resolved)

EXP = config["experiment"]
CONFIG_HASH = config_hash(config)
RESULTS = f"results/{EXP}"
LOGS = f"logs/{EXP}"


wildcard_constraints:
    method="[a-z][a-z0-9_]*",
    round="[0-9]+",
    env="[a-z][a-z0-9_]*",


def runtime_settings(env):
    """What a model job needs from the config: model, sampling and this env only.

    Used as rule params, so editing another env or method does not rerun it.
    """
    return {
        "experiment": EXP,
        "seed": config["seed"],
        "model": config["model"],
        "generation": config["generation"],
        "envs": {env: config["envs"][env]},
    }


def eval_adapter(wildcards):
    """The adapter a (method, round) is evaluated with; none for the base model."""
    return []


def eval_outputs(method, round):
    return [
        f"{RESULTS}/{method}/round={round}/eval/env={env}/metrics.json"
        for env in config["envs"]
    ]


def final_outputs():
    """Everything `rule all` asks for in the configured experiment."""
    demos = [f"{RESULTS}/expert/env={env}/demos.parquet" for env in config["envs"]]
    return [f"{RESULTS}/config.json", *demos, *eval_outputs("pretrained", 0)]


# Every rule runs in the one pinned environment (workflow/envs/evoflow.yaml,
# the same file as environment.yml) with evoflow installed from this checkout.
ENV = "../workflow/envs/evoflow.yaml"

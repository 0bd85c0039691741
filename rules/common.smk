# Config validation (before any job runs), shared paths and target lists.
from evoflow.config import config_hash, validate_config

# Fill defaults in place so every rule sees the same resolved config; a wrong
# key, type or value stops the workflow here with a message naming the key.
_resolved = validate_config(config, source=", ".join(map(str, workflow.configfiles)) or "config")
config.clear()
config.update(_resolved)

EXP = config["experiment"]
RESULTS = f"results/{EXP}"
LOGS = f"logs/{EXP}"


def final_outputs():
    """Everything `rule all` asks for in the configured experiment."""
    return [f"{RESULTS}/config.json"]


# Every rule runs in the one pinned environment (workflow/envs/evoflow.yaml,
# the same file as environment.yml) with evoflow installed from this checkout.
ENV = "../workflow/envs/evoflow.yaml"

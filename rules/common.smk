# Config validation (before any job runs), paths, and the input functions that
# wire each method's steps together. Rules in the other files stay declarative.
import os
import re

from evoflow.config import config_hash, validate_config
from evoflow.methods import POOLED, methods_from_config
from evoflow.report.build import rank_methods, report_outputs

# Fill defaults in place so every rule sees the same resolved config; a wrong
# key, type or value stops the workflow here with a message naming the key.
_resolved = validate_config(config, source=", ".join(map(str, workflow.configfiles)) or "config")
config.clear()
config.update(_resolved)

EXP = config["experiment"]
RESULTS = f"results/{EXP}"
LOGS = f"logs/{EXP}"
REPORTS = f"reports/{EXP}"
CONFIG_HASH = config_hash(config)
ENVS = list(config["envs"])
METHODS = methods_from_config(config)

# Every rule runs in the one pinned environment (workflow/envs/evoflow.yaml,
# the same file as environment.yml) with evoflow installed from this checkout.
ENV = "../workflow/envs/evoflow.yaml"


wildcard_constraints:
    method="[a-z][a-z0-9_]*",
    round="[0-9]+",
    env="[a-z][a-z0-9_]*",


def methods_where(test):
    """Regex matching the configured method names whose kind passes ``test``."""
    names = [re.escape(name) for name, m in METHODS.items() if test(m.kind)]
    return "|".join(names) if names else "(?!)"


def method_of(wildcards):
    return METHODS[wildcards.method]


# --- paths -----------------------------------------------------------------


def client_path(method, round, env, leaf):
    return f"{RESULTS}/{method}/round={round}/client={env}/{leaf}"


def global_adapter(method, round):
    return f"{RESULTS}/{method}/round={round}/global/adapter"


def expert_manifest(env):
    return f"{RESULTS}/expert/env={env}/manifest.json"


POOLED_MANIFEST = f"{RESULTS}/expert/manifest.json"


def eval_files(method, round, leaf):
    return [f"{RESULTS}/{method}/round={round}/eval/env={env}/{leaf}" for env in ENVS]


# --- input functions ---------------------------------------------------------


def runtime_settings(envs, fields):
    """What a model job needs from the config: model, sampling and the listed
    fields of its envs.

    Used as rule params, so editing anything else (another env, a method, an
    unrelated count) reruns nothing.
    """
    return {
        "experiment": EXP,
        "seed": config["seed"],
        "model": config["model"],
        "generation": config["generation"],
        "envs": {env: {f: config["envs"][env][f] for f in fields} for env in envs},
    }


def start_adapter(wildcards):
    """Round t starts from the global adapter of round t-1 (round 1: base model)."""
    round = int(wildcards.round)
    if round <= 1 or not method_of(wildcards).kind.federated:
        return []
    return global_adapter(wildcards.method, round - 1)


def train_manifest(wildcards):
    """The buffer a client trains on: its round's buffer, or its expert demos."""
    if method_of(wildcards).kind.explores:
        return client_path(wildcards.method, wildcards.round, wildcards.env, "buffer.json")
    return expert_manifest(wildcards.env)


def previous_buffer(wildcards):
    round = int(wildcards.round)
    if round <= 1 or not method_of(wildcards).kind.history:
        return []
    return client_path(wildcards.method, round - 1, wildcards.env, "buffer.json")


def client_adapters(wildcards):
    return [client_path(wildcards.method, wildcards.round, env, "adapter") for env in ENVS]


def previous_comm(wildcards):
    round = int(wildcards.round)
    if round <= 1:
        return []
    return f"{RESULTS}/{wildcards.method}/round={round - 1}/global/comm.json"


def eval_adapters(wildcards):
    """Adapters a (method, round) is evaluated with, keyed by env."""
    kind = method_of(wildcards).kind
    if not kind.trains:
        return {}
    if kind.per_env:
        return {env: client_path(wildcards.method, 1, env, "adapter") for env in ENVS}
    return {"global": global_adapter(wildcards.method, wildcards.round)}


# --- targets -----------------------------------------------------------------

REPORT = report_outputs(config, REPORTS)
REPORT_CAPTIONS = {"table_md": "table1.rst", "table_csv": "table1.rst", "table_tex": "table1.rst",
                   "curves": "curves.rst", "ablations": "ablations.rst", "ranks": "ranks.rst"}


def rank_comm_files():
    """comm.json of the Fed-SE runs that differ in rank (for the rank figure)."""
    if "ranks" not in REPORT:
        return []
    return [
        f"{RESULTS}/{name}/round={m.final_round}/global/comm.json"
        for name, m in rank_methods(METHODS).items()
    ]


def explore_buffers():
    """Round buffers of exploring methods (the report counts their explorations)."""
    return [
        client_path(name, r, env, "buffer.json")
        for name, m in METHODS.items() if m.kind.explores
        for r in range(1, m.final_round + 1) for env in ENVS
    ]


def method_evaluations(name):
    method = METHODS[name]
    return [f for r in method.eval_rounds for f in eval_files(name, r, "metrics.json")]


def method_artifacts(name):
    """Every file a method leaves behind, round by round."""
    method = METHODS[name]
    kind, files = method.kind, []
    for round in range(1, method.rounds + 1) if kind.federated else [1] if kind.trains else []:
        for env in ENVS:
            if kind.explores:
                files += [client_path(name, round, env, leaf) for leaf in ("explore.parquet", "buffer.json")]
            if kind.federated or kind.per_env:
                files.append(client_path(name, round, env, "adapter"))
        if kind.federated:
            files += [global_adapter(name, round), f"{RESULTS}/{name}/round={round}/global/comm.json"]
        elif kind.pooled:
            files.append(global_adapter(name, round))
    return files + method_evaluations(name)


def final_outputs():
    """The targets of the default run — the report and every artifact behind it.

    Listing every artifact (not only the report) makes a deleted intermediate —
    one client's adapter, say — a missing target: the next run rebuilds it and
    whatever depends on it, and nothing else.
    """
    artifacts = [f for name in METHODS for f in method_artifacts(name)]
    demos = [f"{RESULTS}/expert/env={env}/demos.parquet" for env in ENVS]
    return [f"{RESULTS}/config.json", *demos, *artifacts, *REPORT.values()]

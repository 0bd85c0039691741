# Config validation (before any job runs), paths, and the input functions that
# wire each method's steps together. Rules in the other files stay declarative.
import os
import re

from evoflow import warmstart
from evoflow.config import check_scale, config_hash, validate_config
from evoflow.helmsman import layout as helm_layout
from evoflow.methods import POOLED, Layout, family, jobs, methods_from_config
from evoflow.methods.base import tts_files
from evoflow.methods.layout import EXPERT, EXPERT_SETS
from evoflow.tracking import enabled as tracking_enabled
from evoflow.report.build import rank_methods, report_outputs, report_rl_inputs, report_sage_inputs

# Fill defaults in place so every rule sees the same resolved config; a wrong
# key, type or value stops the workflow here with a message naming the key.
_source = ", ".join(map(str, workflow.configfiles)) or "config"
_resolved = validate_config(config, source=_source)
check_scale(config, _resolved, _source)  # no silent paper scale on a laptop model
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
    expert_set="|".join(EXPERT_SETS),


# The priority of the jobs a method's next step waits on (expert data and
# manifests, exploration and its buffers, training, aggregation, RL spans;
# Helmsman's data, plan, code and repair). With more jobs ready than cores, they
# go before the leaves (evaluations, reports: priority 0), which no job waits
# on, so a chain never queues behind an evaluation.
CHAIN = 1
# A method that explores waits every round on an exploration, the longest job:
# its chain is the run's critical path. Its jobs (and the expert data every
# chain starts from) go before those of methods that only train (FedIT, the
# matched controls), whose rounds have slack.
EXPLORING = 2
# Methods whose adapter an exploring method starts from (AgentEvol's base agent
# trained as AgentTraj-SFT): the first link of that chain.
STARTS = {m.options.get("init") for m in METHODS.values() if m.kind.explores}


def chain_priority(wildcards):
    """A chain job's priority: EXPLORING for a method that explores or that an
    exploring one starts from, else CHAIN."""
    method = method_of(wildcards)
    return EXPLORING if method.kind.explores or method.name in STARTS else CHAIN


def methods_where(test):
    """Regex matching the configured method names whose kind passes ``test``."""
    names = [re.escape(name) for name, m in METHODS.items() if test(m.kind)]
    return "|".join(names) if names else "(?!)"


def method_of(wildcards):
    return METHODS[wildcards.method]


# --- job messages ------------------------------------------------------------


def job_message(text):
    """A job's one line in a run's output (``message:``). With EVOFLOW_JOB_BLOCKS=1
    in the environment there is none, and Snakemake prints each job's block
    instead: rule, files, wildcards (the tests read dry runs so)."""
    return None if os.environ.get("EVOFLOW_JOB_BLOCKS") == "1" else text


def _counts(key, unit):
    """How many of ``unit`` each env has under ``envs.<env>.<key>``: "16 tasks",
    "8-16 tasks"; None counts as the whole split."""
    values = {config["envs"][env][key] for env in ENVS}
    if None in values:
        return f"all {config['evaluation']['split']} {unit}"
    low, high = min(values, default=0), max(values, default=0)
    return f"{low} {unit}" if low == high else f"{low}-{high} {unit}"


N_ENVS = f"{len(ENVS)} env{'s' * (len(ENVS) != 1)}"
EXPLORED = _counts("explore", "tasks")
EVALUATED = _counts("test", "tasks")


# --- paths -----------------------------------------------------------------

LAYOUT = Layout(RESULTS)
client_path = LAYOUT.client
global_adapter = LAYOUT.global_adapter
expert_manifest = LAYOUT.expert_manifest
POOLED_MANIFEST = LAYOUT.pooled_manifest


def expert_settings(env, expert_set):
    return jobs.expert_settings(config, env, expert_set)


def eval_files(method, round, leaf):
    return LAYOUT.evaluations(method, round, ENVS, leaf)


def tts_outputs(probe, leaf):
    return [LAYOUT.tts("{method}", "{round}", probe, env, leaf) for env in ENVS]


def eval_settings():
    """What an evaluation job needs: the runtime settings of every env's
    evaluated tasks, and the split they are drawn from."""
    settings = runtime_settings(ENVS, ["test", "max_turns", "remote", "strata"])
    return {**settings, "evaluation": config["evaluation"]}


def runtime_settings_with_turns(turns):
    """Evaluation settings with every env's turn cap set to ``turns``."""
    settings = runtime_settings(ENVS, ["test", "max_turns", "remote", "strata"])
    return {**settings, "envs": {e: {**v, "max_turns": turns} for e, v in settings["envs"].items()}}


# --- input functions (the wiring is evoflow.methods.<family>) ----------------


def runtime_settings(envs, fields, generation=None):
    """What a model job needs from the config (evoflow.methods.jobs), as params."""
    return jobs.runtime_settings(config, envs, fields, generation)


def wired(name, *fields):
    """An input function: the method family's ``name`` for the job's wildcards
    (``None``, no such input, becomes an empty list)."""

    def inputs(wildcards):
        method = method_of(wildcards)
        args = [int(getattr(wildcards, f)) if f == "round" else getattr(wildcards, f) for f in fields]
        path = getattr(family(method), name)(LAYOUT, method, *args)
        return [] if path is None else path

    return inputs


start_adapter = wired("start_adapter", "round")
explore_adapter = wired("explore_adapter", "round")
pooled_manifest = wired("pooled_manifest", "round")
train_manifest = wired("train_manifest", "round", "env")
buffer_inputs = wired("buffer_inputs", "round", "env")
previous_comm = wired("previous_comm", "round")
reference_adapter = wired("reference_adapter", "round")


def budget_job(wildcards):
    """(manifest, SFT settings) of the training job whose optimizer steps a
    matched-budget job takes (evoflow.methods.<family>.budget_job), or None."""
    method = method_of(wildcards)
    where = [wildcards.env] if "env" in wildcards.keys() else []
    return family(method).budget_job(LAYOUT, method, METHODS, int(wildcards.round), *where)


def budget_manifest(wildcards):
    job = budget_job(wildcards)
    return [] if job is None else job[0]


def budget_sft(wildcards):
    job = budget_job(wildcards)
    return {} if job is None else job[1].to_dict()


def rl_span_inputs(wildcards):
    method = method_of(wildcards)
    return family(method).span_inputs(LAYOUT, method, int(wildcards.round))


def rl_settings(wildcards):
    """A span's params: the runtime settings, the kind and the RL options."""
    method = method_of(wildcards)
    settings = runtime_settings(ENVS, ["max_turns", "remote", "strata"])
    return {**settings, "kind": method.kind.name, "options": method.options}


def rl_client_span_inputs(wildcards):
    method = method_of(wildcards)
    return family(method).client_span_inputs(LAYOUT, method, int(wildcards.round), wildcards.env)


def rl_client_settings(wildcards):
    """A federated client's span params: the runtime settings of its env alone,
    the kind and the client's RL options (the server step is not its business)."""
    method = method_of(wildcards)
    settings = runtime_settings([wildcards.env], ["max_turns", "remote", "strata"])
    return {**settings, "kind": method.kind.name, "options": family(method).client_options(method)}


def sage_settings():
    """SAGE's experiment-wide params: its data and warm-up (not the methods')."""
    section = config.get("sage") or {}
    return {"experiment": EXP, "seed": config["seed"], "model": config["model"],
            "sage": {k: section[k] for k in ("data", "warmup") if k in section}}


def sage_method_settings(wildcards):
    method = method_of(wildcards)
    return {**sage_settings(), "kind": method.kind.name, "options": method.options}


def sage_span_inputs(wildcards):
    method = method_of(wildcards)
    return family(method).span_inputs(LAYOUT, method, int(wildcards.round))


def sage_eval_inputs(wildcards):
    method = method_of(wildcards)
    adapter = family(method).eval_adapter(LAYOUT, method, int(wildcards.round))
    inputs = {"problems": LAYOUT.sage_data("eval_problems.json")}
    return {**inputs, "adapter": adapter} if adapter else inputs


def explore_sampling(method):
    return family(method).explore_sampling(method, config["generation"])


def merged_buffers(wildcards):
    method = method_of(wildcards)
    return family(method).merged_buffers(LAYOUT, method, int(wildcards.round), ENVS)


def client_adapters(wildcards):
    method = method_of(wildcards)
    return family(method).client_adapters(LAYOUT, method, int(wildcards.round), ENVS)


def eval_adapters(wildcards):
    """Adapters a (method, round) is evaluated with, keyed by env."""
    method = method_of(wildcards)
    return family(method).eval_adapters(LAYOUT, method, int(wildcards.round), ENVS)


# --- Helmsman ----------------------------------------------------------------

HELM = f"{RESULTS}/helmsman"
HELM_SETTINGS = config.get("helmsman") or {}
HELM_SEEDS = (HELM_SETTINGS.get("bench") or {}).get("seeds", [0])


def helm_seeded(pattern):
    """One path per benchmark seed, {task} and {strategy} left as wildcards."""
    return expand(pattern, seed=HELM_SEEDS, allow_missing=True)


def helm_data_file(wildcards):
    return (HELM_SETTINGS.get("data_files") or {}).get(wildcards.task, [])


# --- targets -----------------------------------------------------------------

REPORT = report_outputs(config, REPORTS)
REPORT_CAPTIONS = {"table_md": "table1.rst", "table_csv": "table1.rst", "table_tex": "table1.rst",
                   "comparisons_csv": "table1.rst", "outcomes_csv": "table1.rst",
                   "curves": "curves.rst", "ablations": "ablations.rst", "ranks": "ranks.rst",
                   "table3_md": "table3.rst", "table3_csv": "table3.rst",
                   "iterations": "iterations.rst", "tts_turns": "tts.rst", "tts_passk": "tts.rst",
                   "rl_training": "rl.rst", "rl_tables": "rl.rst", "rl_tables_csv": "rl.rst",
                   "sage_tables": "sage.rst", "sage_tables_csv": "sage.rst", "sage_dynamics": "sage.rst"}


def rank_comm_files():
    """comm.json of the Fed-SE runs that differ in rank (for the rank figure)."""
    if "ranks" not in REPORT:
        return []
    return [
        f"{RESULTS}/{name}/round={m.final_round}/global/comm.json"
        for name, m in rank_methods(METHODS).items()
    ]


def fed_comm_files():
    """comm.json of every federated method's last round (the report labels
    each curve with its bytes and, under DP, its epsilon)."""
    return [
        LAYOUT.comm(name, m.final_round)
        for name, m in METHODS.items()
        if m.kind.federated
    ]


def explore_buffers():
    """Round buffers of exploring methods (the report counts their explorations)."""
    return [f for m in METHODS.values() for f in family(m).buffers(LAYOUT, m, ENVS)]


def method_evaluations(name):
    method = METHODS[name]
    return family(method).evaluations(LAYOUT, method, ENVS)


def all_evaluations():
    """Every method's evaluation metrics, each once (methods that start from
    another's adapter share its evaluation)."""
    return list(dict.fromkeys(f for name in METHODS for f in method_evaluations(name)))


def all_episodes():
    """The episode shards beside every env evaluation's metrics (the report's
    intervals and paired comparisons are computed from them)."""
    shards = []
    for metrics in all_evaluations():  # .../eval/env=<env>/metrics.json
        folder = os.path.dirname(metrics)
        if os.path.basename(folder).startswith("env=") and (
            os.path.basename(os.path.dirname(folder)) == "eval"
        ):
            shards.append(os.path.join(folder, "episodes.parquet"))
    return shards


def method_artifacts(name):
    """Every file a method leaves behind, round by round."""
    method = METHODS[name]
    return family(method).artifacts(LAYOUT, method, ENVS)


def final_outputs():
    """The targets of the default run — the report and every artifact behind it.

    Listing every artifact (not only the report) makes a deleted intermediate —
    one client's adapter, say — a missing target: the next run rebuilds it and
    whatever depends on it, and nothing else.
    """
    artifacts = [f for name in METHODS for f in method_artifacts(name)]
    artifacts += tts_files(LAYOUT, config, METHODS, "metrics.json")
    demos = [LAYOUT.demos(env) for env in ENVS]
    artifacts += helm_layout.runs(HELM, HELM_SETTINGS)
    artifacts += helm_layout.statuses(HELM, HELM_SETTINGS)
    artifacts += helm_layout.reports(REPORTS, HELM_SETTINGS)
    return [LAYOUT.config, *demos, *artifacts, *REPORT.values()]

# evoflow: every step of every experiment is a rule below; `rule all` builds the
# configured experiment. Logic lives in src/evoflow, rules only wire files.
from snakemake.utils import min_version

min_version("9.0")


# The embedded default, unless the command line names experiment files: those then
# stand alone, so a paper config never inherits the embedded default's small counts.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/explore.smk"
include: "rules/train.smk"
include: "rules/fedse.smk"
include: "rules/agentevol.smk"
include: "rules/rl.smk"
include: "rules/fedrl.smk"
include: "rules/sage.smk"
include: "rules/helmsman.smk"
include: "rules/tts.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"


# A local run's script jobs start from one warm interpreter (evoflow.warmstart):
# a model job skips seconds of imports. Remote, cluster, conda and container jobs
# start cold.
onstart:
    if (
        workflow.local_exec
        and not (workflow.remote_exec or workflow.subprocess_exec or workflow.touch)
        and not workflow.deployment_settings.deployment_method
    ):
        preload = ("mlflow",) if tracking_enabled(config) else ()
        warmstart.begin(preload, ledger=f"{LOGS}/bench/{warmstart.LEDGER}")


onsuccess:
    warmstart.end()


onerror:
    warmstart.end()


rule all:
    input:
        final_outputs(),
    message:
        f"{EXP}: every artifact is in {RESULTS}/, the report in {REPORTS}/"
    default_target: True

# AgentEvol's own step (wiring: evoflow.methods.agentevol): the iteration's
# buffers of every env merged into the one dataset its agent learns (D_m).


rule merge_buffers:
    input:
        merged_buffers,
    output:
        f"{RESULTS}/{{method}}/round={{round}}/global/dataset.json",
    log:
        f"{LOGS}/{{method}}/round={{round}}/merge.log",
    benchmark:
        f"{LOGS}/bench/merge_buffers/{{method}}/round={{round}}/merge.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.family == "agentevol" and kind.explores),
    localrule: True
    priority: EXPLORING
    message:
        job_message(f"merge {{wildcards.method}} iteration {{wildcards.round}}: buffers of {N_ENVS}")
    conda:
        ENV
    script:
        "../scripts/merge_manifests.py"

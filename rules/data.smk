# Data: expert demonstrations (the seed buffer of every method, and the larger
# set AgentTraj-L-SFT learns) and manifests.


rule expert_demos:
    output:
        f"{RESULTS}/{{expert_set}}/env={{env}}/demos.parquet",
    log:
        f"{LOGS}/{{expert_set}}/{{env}}.log",
    benchmark:
        f"{LOGS}/bench/expert_demos/{{expert_set}}/{{env}}.tsv",
    params:
        env=lambda wc: expert_settings(wc.env, wc.expert_set),
        experiment=EXP,
        seed=config["seed"],
    priority: EXPLORING
    message:
        job_message("expert demonstrations: {wildcards.env} ({wildcards.expert_set} set)")
    conda:
        ENV
    script:
        "../scripts/expert_demos.py"


rule expert_manifest:
    input:
        f"{RESULTS}/{{expert_set}}/env={{env}}/demos.parquet",
    output:
        f"{RESULTS}/{{expert_set}}/env={{env}}/manifest.json",
    log:
        f"{LOGS}/{{expert_set}}/{{env}}.manifest.log",
    localrule: True
    priority: EXPLORING
    message:
        job_message("manifest: {wildcards.expert_set} demonstrations of {wildcards.env}")
    conda:
        ENV
    script:
        "../scripts/manifest.py"


rule pooled_manifest:
    input:
        expand(f"{RESULTS}/{{{{expert_set}}}}/env={{env}}/demos.parquet", env=ENVS),
    output:
        f"{RESULTS}/{{expert_set}}/manifest.json",
    log:
        f"{LOGS}/{{expert_set}}/pooled.manifest.log",
    localrule: True
    priority: EXPLORING
    message:
        job_message(f"manifest: {{wildcards.expert_set}} demonstrations of {N_ENVS}, pooled")
    conda:
        ENV
    script:
        "../scripts/manifest.py"

# Data: expert demonstrations (the seed buffer of every method) and manifests.


rule expert_demos:
    output:
        f"{RESULTS}/expert/env={{env}}/demos.parquet",
    log:
        f"{LOGS}/expert/{{env}}.log",
    params:
        env=lambda wc: {
            k: config["envs"][wc.env][k] for k in ("demos", "demos_file", "max_turns")
        },
        experiment=EXP,
        seed=config["seed"],
    conda:
        ENV
    script:
        "../scripts/expert_demos.py"


rule expert_manifest:
    input:
        f"{RESULTS}/expert/env={{env}}/demos.parquet",
    output:
        f"{RESULTS}/expert/env={{env}}/manifest.json",
    log:
        f"{LOGS}/expert/{{env}}.manifest.log",
    localrule: True
    conda:
        ENV
    script:
        "../scripts/manifest.py"


rule pooled_manifest:
    input:
        expand(f"{RESULTS}/expert/env={{env}}/demos.parquet", env=ENVS),
    output:
        POOLED_MANIFEST,
    log:
        f"{LOGS}/expert/pooled.manifest.log",
    localrule: True
    conda:
        ENV
    script:
        "../scripts/manifest.py"

# Data: expert demonstrations (the seed buffer of every method).


rule expert_demos:
    output:
        f"{RESULTS}/expert/env={{env}}/demos.parquet",
    log:
        f"{LOGS}/expert/{{env}}.log",
    params:
        env=lambda wc: config["envs"][wc.env],
        experiment=EXP,
        seed=config["seed"],
        config_hash=CONFIG_HASH,
    conda:
        ENV
    script:
        "../scripts/expert_demos.py"

# Reports: tables, figures and the provenance of an experiment.


rule resolved_config:
    output:
        f"{RESULTS}/config.json",
    log:
        f"{LOGS}/resolved_config.log",
    params:
        config=config,
        config_hash=CONFIG_HASH,
    localrule: True
    conda:
        ENV
    script:
        "../scripts/write_config.py"

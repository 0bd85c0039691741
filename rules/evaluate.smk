# Evaluation: greedy rollouts of a (method, round) on every env's test split.


rule evaluate:
    input:
        adapter=eval_adapter,
    output:
        episodes=f"{RESULTS}/{{method}}/round={{round}}/eval/env={{env}}/episodes.parquet",
        metrics=f"{RESULTS}/{{method}}/round={{round}}/eval/env={{env}}/metrics.json",
    log:
        f"{LOGS}/{{method}}/round={{round}}/eval/{{env}}.log",
    params:
        settings=lambda wc: runtime_settings(wc.env),
        config_hash=CONFIG_HASH,
    conda:
        ENV
    script:
        "../scripts/evaluate.py"

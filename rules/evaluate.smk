# Evaluation: greedy rollouts of a (method, round) on every env's test tasks,
# all envs in one job so the model loads once and decoding is shared.


rule evaluate:
    input:
        unpack(eval_adapters),
    output:
        episodes=eval_files("{method}", "{round}", "episodes.parquet"),
        metrics=eval_files("{method}", "{round}", "metrics.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/evaluate.log",
    benchmark:
        f"{LOGS}/bench/evaluate/{{method}}/round={{round}}/evaluate.tsv",
    params:
        settings=runtime_settings(ENVS, ["test", "max_turns", "remote", "strata"]),
        envs=ENVS,
        kind=lambda wildcards: method_of(wildcards).kind.name,
    threads: 1
    conda:
        ENV
    script:
        "../scripts/evaluate.py"

# Evaluation: greedy rollouts of a (method, round) on every env's evaluated tasks
# (test, or validation in a config that chooses settings),
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
        settings=eval_settings(),
        envs=ENVS,
        kind=lambda wildcards: method_of(wildcards).kind.name,
        samples=lambda wildcards: method_of(wildcards).options.get("samples", 1),
    threads: 1
    message:
        job_message(f"evaluate {{wildcards.method}} round {{wildcards.round}}: {N_ENVS} × {EVALUATED}")
    conda:
        ENV
    script:
        "../scripts/evaluate.py"

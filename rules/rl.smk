# Multi-turn RL (wiring: evoflow.methods.rl): one job per span of training
# steps; span k starts from span k-1's folder, so a killed span reruns alone.


rule rl_span:
    input:
        unpack(rl_span_inputs),
    output:
        adapter=directory(f"{RESULTS}/{{method}}/round={{round}}/global/adapter"),
        state=f"{RESULTS}/{{method}}/round={{round}}/global/state.pt",
        rollouts=f"{RESULTS}/{{method}}/round={{round}}/global/rollouts.parquet",
        metrics=f"{RESULTS}/{{method}}/round={{round}}/global/metrics.json",
    log:
        f"{LOGS}/{{method}}/round={{round}}/rl_span.log",
    benchmark:
        f"{LOGS}/bench/rl_span/{{method}}/round={{round}}/rl_span.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.family == "rl"),
    params:
        settings=rl_settings,
    threads: 1
    priority: CHAIN
    message:
        job_message("RL {wildcards.method}: span {wildcards.round}")
    conda:
        ENV
    script:
        "../scripts/rl_span.py"

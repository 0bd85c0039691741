# Federated multi-turn RL (wiring: evoflow.methods.fedrl): one RL span per client
# and round on the client's env alone, from last round's global adapter and the
# client's own state; the `aggregate` rule averages the client adapters.


rule rl_client_span:
    input:
        unpack(rl_client_span_inputs),
    output:
        adapter=directory(client_path("{method}", "{round}", "{env}", "adapter")),
        state=client_path("{method}", "{round}", "{env}", "state.pt"),
        rollouts=client_path("{method}", "{round}", "{env}", "rollouts.parquet"),
        metrics=client_path("{method}", "{round}", "{env}", "metrics.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/rl_span/{{env}}.log",
    benchmark:
        f"{LOGS}/bench/rl_client_span/{{method}}/round={{round}}/{{env}}.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.family == "fedrl"),
    params:
        settings=rl_client_settings,
    threads: 1
    priority: CHAIN
    message:
        job_message("federated RL {wildcards.method} round {wildcards.round}: client {wildcards.env}")
    conda:
        ENV
    script:
        "../scripts/rl_span.py"

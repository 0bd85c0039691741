# Exploration and experience buffers of self-evolving methods (one client = one
# env; a round's clients explore in one job, since they share its start adapter),
# shared by the families whose kinds explore (wiring: evoflow.methods).


rule explore:
    input:
        adapter=explore_adapter,
    output:
        [client_path("{method}", "{round}", env, "explore.parquet") for env in ENVS],
    log:
        f"{LOGS}/{{method}}/round={{round}}/explore.log",
    benchmark:
        f"{LOGS}/bench/explore/{{method}}/round={{round}}/explore.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.explores),
    params:
        envs=ENVS,
        settings=lambda wc: runtime_settings(
            ENVS, ["explore", "max_turns", "remote", "strata"], explore_sampling(method_of(wc))
        ),
    threads: 1
    priority: EXPLORING
    message:
        job_message(f"explore {{wildcards.method}} round {{wildcards.round}}: {len(ENVS)} clients × {EXPLORED}")
    conda:
        ENV
    script:
        "../scripts/explore.py"


rule buffer:
    input:
        unpack(buffer_inputs),
    output:
        client_path("{method}", "{round}", "{env}", "buffer.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/buffer/{{env}}.log",
    benchmark:
        f"{LOGS}/bench/buffer/{{method}}/round={{round}}/buffer/{{env}}.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.explores),
    params:
        select=lambda wc: family(method_of(wc)).buffer_select(method_of(wc)),
    localrule: True
    priority: EXPLORING
    message:
        job_message("buffer {wildcards.method} round {wildcards.round}: client {wildcards.env}")
    conda:
        ENV
    script:
        "../scripts/buffer.py"

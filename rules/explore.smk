# Exploration and experience buffers of self-evolving methods (one client = one
# env), shared by the families whose kinds explore (wiring: evoflow.methods).


rule explore:
    input:
        adapter=explore_adapter,
    output:
        client_path("{method}", "{round}", "{env}", "explore.parquet"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/explore/{{env}}.log",
    benchmark:
        f"{LOGS}/bench/explore/{{method}}/round={{round}}/explore/{{env}}.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.explores),
    params:
        settings=lambda wc: runtime_settings(
            [wc.env], ["explore", "max_turns", "remote", "strata"], explore_sampling(method_of(wc))
        ),
    threads: 1
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
    conda:
        ENV
    script:
        "../scripts/buffer.py"

# Exploration and experience buffers of self-evolving methods (one client = one env).


rule explore:
    input:
        adapter=start_adapter,
    output:
        client_path("{method}", "{round}", "{env}", "explore.parquet"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/explore/{{env}}.log",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.explores),
    params:
        settings=lambda wc: runtime_settings([wc.env], ["explore", "max_turns", "remote"]),
    threads: 1
    conda:
        ENV
    script:
        "../scripts/explore.py"


rule buffer:
    input:
        seed=lambda wc: expert_manifest(wc.env),
        explored=client_path("{method}", "{round}", "{env}", "explore.parquet"),
        previous=previous_buffer,
    output:
        client_path("{method}", "{round}", "{env}", "buffer.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/buffer/{{env}}.log",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.explores),
    params:
        select=lambda wc: method_of(wc).kind.select,
    localrule: True
    conda:
        ENV
    script:
        "../scripts/buffer.py"

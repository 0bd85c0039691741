# The Fed-SE family's steps (wiring: evoflow.methods.fedse): exploration and
# buffers of self-evolving clients, LoRA SFT of a client or a pooled adapter, and
# the server's aggregation — whose inputs are adapters, never trajectories.


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
        unpack(buffer_inputs),
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


rule train_client:
    input:
        manifest=train_manifest,
        init=start_adapter,
    output:
        directory(client_path("{method}", "{round}", "{env}", "adapter")),
    log:
        f"{LOGS}/{{method}}/round={{round}}/train/{{env}}.log",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.federated or kind.per_env),
    params:
        model=config["model"]["name"],
        sft=lambda wc: method_of(wc).sft_for(int(wc.round), wc.env).to_dict(),
        loss_log=f"{LOGS}/{{method}}/round={{round}}/train/{{env}}.loss.jsonl",
    threads: 1
    conda:
        ENV
    script:
        "../scripts/train.py"


rule train_pooled:
    input:
        manifest=POOLED_MANIFEST,
    output:
        directory(f"{RESULTS}/{{method}}/round={{round}}/global/adapter"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/train/pooled.log",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.pooled),
    params:
        model=config["model"]["name"],
        sft=lambda wc: method_of(wc).sft_for(int(wc.round), POOLED).to_dict(),
        loss_log=f"{LOGS}/{{method}}/round={{round}}/train/pooled.loss.jsonl",
    threads: 1
    conda:
        ENV
    script:
        "../scripts/train.py"


rule aggregate:
    input:
        clients=client_adapters,
        previous_comm=previous_comm,
    output:
        adapter=directory(f"{RESULTS}/{{method}}/round={{round}}/global/adapter"),
        comm=f"{RESULTS}/{{method}}/round={{round}}/global/comm.json",
    log:
        f"{LOGS}/{{method}}/round={{round}}/aggregate.log",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.federated),
    params:
        strategy=lambda wc: family(method_of(wc)).aggregation(method_of(wc)),
    conda:
        ENV
    script:
        "../scripts/aggregate.py"

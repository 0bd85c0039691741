# The Fed-SE family's own steps (wiring: evoflow.methods.fedse): LoRA SFT of one
# client in a round, and the server's aggregation — whose inputs are adapters,
# never trajectories.


rule train_client:
    input:
        manifest=train_manifest,
        init=start_adapter,
        budget=budget_manifest,
    output:
        directory(client_path("{method}", "{round}", "{env}", "adapter")),
    log:
        f"{LOGS}/{{method}}/round={{round}}/train/{{env}}.log",
    benchmark:
        f"{LOGS}/bench/train_client/{{method}}/round={{round}}/train/{{env}}.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.family == "fedse" and (kind.federated or kind.per_env)),
    params:
        model=config["model"]["name"],
        budget_sft=budget_sft,
        sft=lambda wc: family(method_of(wc)).sft(method_of(wc), int(wc.round), wc.env).to_dict(),
        loss_log=f"{LOGS}/{{method}}/round={{round}}/train/{{env}}.loss.jsonl",
    threads: 1
    priority: chain_priority
    message:
        job_message("train {wildcards.method} round {wildcards.round}: client {wildcards.env}")
    conda:
        ENV
    script:
        "../scripts/train.py"


rule aggregate:
    input:
        clients=client_adapters,
        previous_comm=previous_comm,
        reference=reference_adapter,
    output:
        adapter=directory(f"{RESULTS}/{{method}}/round={{round}}/global/adapter"),
        comm=f"{RESULTS}/{{method}}/round={{round}}/global/comm.json",
    log:
        f"{LOGS}/{{method}}/round={{round}}/aggregate.log",
    benchmark:
        f"{LOGS}/bench/aggregate/{{method}}/round={{round}}/aggregate.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.federated),
    params:
        strategy=lambda wc: family(method_of(wc)).aggregation(method_of(wc)),
        server=lambda wc: family(method_of(wc)).server_settings(method_of(wc)).to_dict(),
        seed=config["seed"],
        model=config["model"]["name"],
        sft=lambda wc: method_of(wc).sft_for(1, ENVS[0]).to_dict(),
    priority: chain_priority
    message:
        job_message(f"aggregate {{wildcards.method}} round {{wildcards.round}}: {len(ENVS)} client adapters")
    conda:
        ENV
    script:
        "../scripts/aggregate.py"

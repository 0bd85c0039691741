# LoRA SFT: one client in one round, or one pooled adapter (Centralized).


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

# LoRA SFT of one adapter on pooled data: Centralized (every env's demos), and
# AgentEvol's base agent and learning steps, and its matched-budget control's
# (wiring: evoflow.methods.<family>).


rule train_pooled:
    input:
        manifest=pooled_manifest,
        init=start_adapter,
        budget=budget_manifest,
    output:
        directory(f"{RESULTS}/{{method}}/round={{round}}/global/adapter"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/train/pooled.log",
    benchmark:
        f"{LOGS}/bench/train_pooled/{{method}}/round={{round}}/train/pooled.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.pooled),
    params:
        model=config["model"]["name"],
        budget_sft=budget_sft,
        sft=lambda wc: family(method_of(wc)).sft(method_of(wc), int(wc.round), POOLED).to_dict(),
        loss_log=f"{LOGS}/{{method}}/round={{round}}/train/pooled.loss.jsonl",
    threads: 1
    priority: chain_priority
    message:
        job_message(f"train {{wildcards.method}} round {{wildcards.round}}: {N_ENVS} pooled")
    conda:
        ENV
    script:
        "../scripts/train.py"

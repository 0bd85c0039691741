# Helmsman (wiring: evoflow.helmsman.run): AgentFL-Bench's substitute data and
# baselines, and the agents' phases per task — plan, code, refine (simulate /
# diagnose / repair within the budget) — then their final codebase on the
# benchmark's settings, and the tables.

wildcard_constraints:
    task="Q[0-9]+",
    strategy="[a-z]+",


rule helm_data:
    input:
        helm_data_file,
    output:
        helm_seeded(f"{HELM}/{{task}}/data/seed={{seed}}.npz"),
    log:
        f"{LOGS}/helmsman/{{task}}/data.log",
    params:
        seeds=HELM_SEEDS,
    priority: CHAIN
    message:
        job_message("Helmsman {wildcards.task}: data of every seed")
    conda:
        ENV
    script:
        "../scripts/helm_data.py"


rule helm_baseline:
    input:
        data=helm_seeded(f"{HELM}/{{task}}/data/seed={{seed}}.npz"),
    output:
        helm_seeded(f"{HELM}/{{task}}/baseline={{strategy}}/seed={{seed}}/run.json"),
    log:
        f"{LOGS}/helmsman/{{task}}/baseline={{strategy}}.log",
    params:
        bench=HELM_SETTINGS.get("bench"),
    threads: 1
    message:
        job_message("Helmsman {wildcards.task}: baseline {wildcards.strategy}, every seed")
    conda:
        ENV
    script:
        "../scripts/helm_baseline.py"


rule helm_plan:
    output:
        f"{HELM}/{{task}}/plan.json",
    log:
        f"{LOGS}/helmsman/{{task}}/plan.log",
    params:
        config=config,
        calls=f"{HELM}/{{task}}/calls.jsonl",
        approval=f"{HELM}/{{task}}/approval.json",
    threads: 1
    priority: CHAIN
    message:
        job_message("Helmsman {wildcards.task}: the agents plan")
    conda:
        ENV
    script:
        "../scripts/helm_plan.py"


rule helm_code:
    input:
        plan=f"{HELM}/{{task}}/plan.json",
    output:
        directory(f"{HELM}/{{task}}/code"),
    log:
        f"{LOGS}/helmsman/{{task}}/code.log",
    params:
        config=config,
        calls=f"{HELM}/{{task}}/calls.jsonl",
    threads: 1
    priority: CHAIN
    message:
        job_message("Helmsman {wildcards.task}: the agents write the code")
    conda:
        ENV
    script:
        "../scripts/helm_code.py"


rule helm_refine:
    input:
        plan=f"{HELM}/{{task}}/plan.json",
        code=f"{HELM}/{{task}}/code",
        data=f"{HELM}/{{task}}/data/seed={HELM_SEEDS[0]}.npz",
    output:
        status=f"{HELM}/{{task}}/status.json",
        attempts=f"{HELM}/{{task}}/attempts.parquet",
    log:
        f"{LOGS}/helmsman/{{task}}/refine.log",
    params:
        config=config,
        calls=f"{HELM}/{{task}}/calls.jsonl",
    threads: 1
    priority: CHAIN
    message:
        job_message("Helmsman {wildcards.task}: simulate, diagnose, repair")
    conda:
        ENV
    script:
        "../scripts/helm_refine.py"


rule helm_generated:
    input:
        status=f"{HELM}/{{task}}/status.json",
        data=helm_seeded(f"{HELM}/{{task}}/data/seed={{seed}}.npz"),
    output:
        helm_seeded(f"{HELM}/{{task}}/generated/seed={{seed}}/run.json"),
    log:
        f"{LOGS}/helmsman/{{task}}/generated.log",
    params:
        bench=HELM_SETTINGS.get("bench"),
    threads: 1
    message:
        job_message("Helmsman {wildcards.task}: the generated code, every seed")
    conda:
        ENV
    script:
        "../scripts/helm_generated.py"


rule helm_report:
    input:
        runs=helm_layout.runs(HELM, HELM_SETTINGS),
        statuses=helm_layout.statuses(HELM, HELM_SETTINGS),
    output:
        tables=f"{REPORTS}/helmsman_tables.md",
        csv=f"{REPORTS}/helmsman_tables.csv",
        comparisons=f"{REPORTS}/helmsman_comparisons.csv",
    log:
        f"{LOGS}/helmsman/report.log",
    params:
        settings=HELM_SETTINGS,
        folder=HELM,
    localrule: True
    message:
        job_message(f"Helmsman tables: {REPORTS}/helmsman_tables.md")
    conda:
        ENV
    script:
        "../scripts/helm_report.py"

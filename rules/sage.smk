# SAGE (wiring: evoflow.methods.sage): the seed pool, the held-out (test) problems
# and the validation problems settings are chosen on (none is chosen here), the
# warm-up on the roles' tags, one job per span of self-play steps, and the
# Solver's evaluation on the held-out problems.


rule sage_data:
    input:
        benchmarks=list((config.get("sage") or {}).get("data", {}).get("benchmarks", {}).values()),
    output:
        pool=LAYOUT.sage_data("pool.parquet"),
        problems=LAYOUT.sage_data("eval_problems.json"),
        validation=LAYOUT.sage_data("val_problems.json"),
    log:
        f"{LOGS}/sage_data.log",
    params:
        settings=sage_settings(),
    priority: CHAIN
    message:
        job_message("SAGE data: seed pool, held-out and validation problems")
    conda:
        ENV
    script:
        "../scripts/sage_data.py"


rule sage_warmup:
    input:
        pool=LAYOUT.sage_data("pool.parquet"),
    output:
        adapter=directory(LAYOUT.sage_warmup),
    log:
        f"{LOGS}/sage_warmup.log",
    benchmark:
        f"{LOGS}/bench/sage_warmup/sage_warmup.tsv",
    params:
        settings=sage_settings(),
    threads: 1
    priority: CHAIN
    message:
        job_message("SAGE warm-up: SFT on the roles' tags")
    conda:
        ENV
    script:
        "../scripts/sage_warmup.py"


rule sage_span:
    input:
        unpack(sage_span_inputs),
    output:
        adapter=directory(f"{RESULTS}/{{method}}/round={{round}}/global/adapter"),
        state=f"{RESULTS}/{{method}}/round={{round}}/global/state.pt",
        rollouts=f"{RESULTS}/{{method}}/round={{round}}/global/rollouts.parquet",
        metrics=f"{RESULTS}/{{method}}/round={{round}}/global/metrics.json",
        pool=f"{RESULTS}/{{method}}/round={{round}}/global/pool.parquet",
    log:
        f"{LOGS}/{{method}}/round={{round}}/sage_span.log",
    benchmark:
        f"{LOGS}/bench/sage_span/{{method}}/round={{round}}/sage_span.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.family == "sage"),
    params:
        settings=sage_method_settings,
    threads: 1
    priority: CHAIN
    message:
        job_message("SAGE {wildcards.method}: span {wildcards.round} of self-play")
    conda:
        ENV
    script:
        "../scripts/sage_span.py"


rule sage_evaluate:
    input:
        unpack(sage_eval_inputs),
    output:
        episodes=LAYOUT.sage_eval("{method}", "{round}", "episodes.parquet"),
        metrics=LAYOUT.sage_eval("{method}", "{round}", "metrics.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/sage_evaluate.log",
    benchmark:
        f"{LOGS}/bench/sage_evaluate/{{method}}/round={{round}}/sage_evaluate.tsv",
    wildcard_constraints:
        method=methods_where(lambda kind: kind.family == "sage"),
    params:
        settings=sage_method_settings,
    threads: 1
    message:
        job_message("evaluate {wildcards.method} span {wildcards.round}: the Solver on held-out problems")
    conda:
        ENV
    script:
        "../scripts/sage_evaluate.py"

# Test-time scaling of a method's final adapter (evoflow.evaluate.scaling):
# greedy evaluation at each max-turn cap, and pass@k over k samples per task.


rule tts_turns:
    input:
        unpack(eval_adapters),
    output:
        episodes=tts_outputs("turns={turns}", "episodes.parquet"),
        metrics=tts_outputs("turns={turns}", "metrics.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/tts_turns={{turns}}.log",
    benchmark:
        f"{LOGS}/bench/tts_turns/{{method}}/round={{round}}/tts_turns={{turns}}.tsv",
    wildcard_constraints:
        turns="[0-9]+",
    params:
        settings=lambda wc: runtime_settings_with_turns(int(wc.turns)),
        envs=ENVS,
        kind=lambda wildcards: method_of(wildcards).kind.name,
        samples=1,  # one greedy episode per task at each cap
    threads: 1
    message:
        job_message(f"test-time scaling {{wildcards.method}}: at most {{wildcards.turns}} turns, {N_ENVS}")
    conda:
        ENV
    script:
        "../scripts/evaluate.py"


rule tts_passk:
    input:
        unpack(eval_adapters),
    output:
        episodes=tts_outputs("passk", "episodes.parquet"),
        metrics=tts_outputs("passk", "metrics.json"),
    log:
        f"{LOGS}/{{method}}/round={{round}}/tts_passk.log",
    benchmark:
        f"{LOGS}/bench/tts_passk/{{method}}/round={{round}}/tts_passk.tsv",
    params:
        settings=runtime_settings(ENVS, ["test", "max_turns", "remote", "strata"]),
        samples=config["tts"]["samples"],
    threads: 1
    message:
        job_message(f"test-time scaling {{wildcards.method}}: pass@k over {config['tts']['samples']} samples per task")
    conda:
        ENV
    script:
        "../scripts/passk.py"

# Reports: the resolved config, Table 1, its paired comparisons and figures —
# regenerated from cached episodes and metrics.


rule resolved_config:
    output:
        f"{RESULTS}/config.json",
    log:
        f"{LOGS}/resolved_config.log",
    params:
        config=config,
        config_hash=CONFIG_HASH,
    localrule: True
    message:
        job_message(f"resolved config: {RESULTS}/config.json")
    conda:
        ENV
    script:
        "../scripts/write_config.py"


rule report:
    input:
        config=f"{RESULTS}/config.json",
        metrics=all_evaluations(),
        episodes=all_episodes(),
        comm=rank_comm_files(),
        fed_comm=fed_comm_files(),
        buffers=explore_buffers(),
        tts=tts_files(LAYOUT, config, METHODS, "metrics.json"),
        rl=report_rl_inputs(config, RESULTS),
        sage=report_sage_inputs(config, RESULTS),
    output:
        **{
            name: report(path, caption=f"../workflow/report/{REPORT_CAPTIONS[name]}", category="Fed-SE")
            for name, path in REPORT.items()
        },
    log:
        f"{LOGS}/report.log",
    params:
        config=config,
        results=lambda wc, input: os.path.dirname(input.config),
    localrule: True
    message:
        job_message(f"report: tables and figures in {REPORTS}/")
    conda:
        ENV
    script:
        "../scripts/report.py"

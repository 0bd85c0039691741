# Server step of a federated round: client adapters in, global adapter out.
# Its inputs are adapter folders (and last round's comm.json) — never trajectories.


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
        strategy=lambda wc: "weighted" if method_of(wc).kind.weighted else "mean",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"

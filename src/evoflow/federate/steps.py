"""One client's round on its own machine: explore with the adapter the server
sent, extend the experience buffer, train — the same library calls, settings
and file layout as the Snakemake simulation's jobs, under the client's own
results folder. Nothing here sends anything; trajectories stay where they are
written."""

from __future__ import annotations

import logging
from pathlib import Path

from evoflow.atomic import write_text
from evoflow.config import config_hash
from evoflow.methods import Layout, family, jobs
from evoflow.methods.base import Method

log = logging.getLogger(__name__)


def client_layout(root: str | Path, config: dict) -> Layout:
    """The client's store: ``<root>/results/<experiment>``, as in a simulated run."""
    return Layout(str(Path(root).resolve() / "results" / config["experiment"]))


def ensure_expert_demos(layout: Layout, config: dict, env: str) -> str:
    """The env's expert demonstrations (the seed buffer) and their manifest."""
    from evoflow.rollout.expert import write_demos
    from evoflow.store.manifest import write_shards_manifest

    manifest = layout.expert_manifest(env)
    settings = jobs.expert_settings(config, env)
    experiment, seed = config["experiment"], config["seed"]
    digest = config_hash(dict(settings, experiment=experiment, seed=seed))
    marker = Path(manifest).with_name(
        "settings.sha256"
    )  # what the demos were played with
    if Path(manifest).is_file() and marker.is_file() and marker.read_text() == digest:
        return manifest
    write_demos(
        layout.demos(env),
        env_name=env,
        n_tasks=settings["demos"],
        experiment=experiment,
        seed=seed,
        config_hash=digest,
        max_turns=settings["max_turns"],
        demos_file=settings["demos_file"],
        strata=settings["strata"],
    )
    write_shards_manifest(manifest, [layout.demos(env)], rule="expert_manifest")
    write_text(marker, digest)
    return manifest


def carried_buffer(layout: Layout, method: Method, round: int, env: str) -> str | None:
    """The buffer a round extends: last round's, or — for a client that
    missed rounds (lost under partial participation) — its latest earlier one
    (none: it restarts from the expert demos)."""
    for earlier in range(round - 1, 0, -1):
        path = layout.client(method.name, earlier, env, "buffer.json")
        if Path(path).is_file():
            if earlier < round - 1:
                log.warning("client %s: no buffer of round %d; round %d's carried over",
                            env, round - 1, earlier)  # fmt: skip
            return path
    return None


def client_round(config: dict, method: Method, env: str, round: int,
                 start: str | None, layout: Layout, threads: int = 1) -> str:  # fmt: skip
    """Run round ``round`` of ``method`` for client ``env`` from the ``start``
    adapter folder (``None``: the fresh LoRA of round 1); returns the trained
    adapter's folder."""
    from evoflow.rollout.explore import explore
    from evoflow.store.manifest import build_buffer
    from evoflow.train.run import train_from_manifest

    if method.kind.family == "fedrl":
        return rl_client_round(config, method, env, round, start, layout, threads)
    wiring = family(method)
    ensure_expert_demos(layout, config, env)
    name = method.name
    if method.kind.explores:
        sampling = wiring.explore_sampling(method, config["generation"])
        settings = jobs.runtime_settings(config, [env], ["explore", "max_turns", "remote", "strata"],
                                         sampling)  # fmt: skip
        explored = layout.client(name, round, env, "explore.parquet")
        explore(settings, config_hash(settings), env_name=env, method=name, round=round,
                adapter=start, output=explored, threads=threads)  # fmt: skip
        sources = wiring.buffer_inputs(layout, method, round, env)
        build_buffer(layout.client(name, round, env, "buffer.json"),
                     seed_manifest=sources["seed"], explored=sources["explored"],
                     select=wiring.buffer_select(method),
                     previous=carried_buffer(layout, method, round, env) if "previous" in sources else None,
                     info={"method": name, "round": round, "client": env})  # fmt: skip
    output = layout.client(name, round, env, "adapter")
    train_from_manifest(
        wiring.train_manifest(layout, method, round, env),
        model=config["model"]["name"],
        output=output,
        sft=method.sft_for(round, env).to_dict(),
        init_adapter=start,
        loss_log=str(Path(output).parent / "train.loss.jsonl"),
        threads=threads,
    )
    log.info("client %s: round %d of %s trained -> %s", env, round, name, output)
    return output


def rl_client_round(config: dict, method: Method, env: str, round: int,
                    start: str | None, layout: Layout, threads: int = 1) -> str:  # fmt: skip
    """A federated RL client's round: one RL span on its env from ``start``,
    resuming its own state of last round (the ``rl_client_span`` job's call);
    returns the trained adapter's folder. A client that missed last round
    (lost under partial participation) has no state to resume — its optimizer
    and its KL reference — and is refused: it stays out of the federation."""
    from evoflow.train.rl.run import run_rl_span

    settings = {**jobs.runtime_settings(config, [env], ["max_turns", "remote", "strata"]),
                "kind": method.kind.name, "options": family(method).client_options(method)}  # fmt: skip
    inputs = {"init": start} if start else {}
    previous = Path(layout.client(method.name, round - 1, env, "state.pt"))
    if round > 1 and not previous.is_file():
        raise FileNotFoundError(f"client {env}: no RL state of round {round - 1} ({previous}); "
                                "a federated RL client that missed a round cannot rejoin")  # fmt: skip
    if round > 1:
        inputs["previous"] = str(previous.parent)
    output = Path(layout.client(method.name, round, env, "adapter"))
    run_rl_span(settings, config_hash(settings), method=method.name, round=round,
                inputs=inputs, output=output.parent, threads=threads)  # fmt: skip
    log.info("client %s: round %d of %s trained -> %s", env, round, method.name, output)
    return str(output)

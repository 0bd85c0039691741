"""The ``evoflow`` command line: one subcommand per user-facing library entry point.

Handlers import their library modules lazily so that, for example, ``evoflow
query`` never pays for importing torch.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from evoflow import __version__
from evoflow.errors import EvoflowError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(
    name: str, help_text: str, arguments: Callable[[argparse.ArgumentParser], None]
):
    """Register ``handler`` as ``evoflow <name>``."""

    def register(handler: Handler) -> Handler:
        COMMANDS[name] = (help_text, arguments, handler)
        return handler

    return register


# --- query -------------------------------------------------------------------


def _query_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("sql", nargs="?", help="SQL over the views 'episodes' and 'turns'")
    p.add_argument("--stats", action="store_true", help="summary of all shards")
    p.add_argument(
        "--results", default="results", help="folder to scan (default: results)"
    )
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--max-rows", type=int, default=100, help="rows shown as a table")


@command("query", "Run SQL over every trajectory shard with DuckDB.", _query_args)
def _query(args: argparse.Namespace) -> int:
    import duckdb

    from evoflow.store.query import connect, find_shards, stats

    if not args.sql and not args.stats:
        raise EvoflowError("query: give SQL text or --stats")
    con = connect(args.results)
    try:
        relation = stats(con) if args.stats else con.sql(args.sql)
    except duckdb.Error as exc:
        raise EvoflowError(f"query failed: {exc}") from None
    if relation is None:
        return 0
    if args.stats:
        print(f"{len(find_shards(args.results))} shards under {args.results}/")
    frame = relation.df()
    if args.format == "csv":
        print(frame.to_csv(index=False), end="")
    elif args.format == "json":
        print(frame.to_json(orient="records", date_format="iso"))
    else:
        import pandas as pd

        with pd.option_context("display.max_colwidth", 60, "display.width", 200):
            print(frame.to_string(index=False, max_rows=args.max_rows))
    return 0


# --- config ------------------------------------------------------------------


def _config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path, help="experiment YAML file")


@command(
    "check-config",
    "Validate an experiment config and print it with defaults and its sha256 "
    "(the hash a SuperNode pins with --node-config config_sha256=...).",
    _config_args,
)
def _check_config(args: argparse.Namespace) -> int:
    import yaml

    from evoflow.config import config_hash, load_config

    config = load_config(args.path)
    print(yaml.safe_dump(config, sort_keys=False), end="")
    print(f"# sha256: {config_hash(config)}")
    return 0


@command(
    "tracking",
    "Where an experiment's MLflow runs are (tracking: {mlflow: true}) and the "
    "command that opens them in the MLflow UI.",
    _config_args,
)
def _tracking(args: argparse.Namespace) -> int:
    from evoflow.config import load_config
    from evoflow.tracking import enabled, tracking_uri, ui_command

    config = load_config(args.path)
    state = "on" if enabled(config) else "off (tracking: {mlflow: true} turns it on)"
    print(f"# MLflow tracking: {state}; runs of {config['experiment']!r} at "
          f"{tracking_uri(config)}")  # fmt: skip
    print(ui_command(config))
    return 0


# --- AgentTraj ---------------------------------------------------------------


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", type=Path, help="AgentTraj JSON file")
    p.add_argument("output", type=Path, help="shard to write (.parquet)")
    p.add_argument("--experiment", required=True)
    p.add_argument("--split", default="train")


@command(
    "import-agenttraj", "Convert AgentTraj JSON into a trajectory shard.", _import_args
)
def _import(args: argparse.Namespace) -> int:
    from evoflow.store import ShardMeta, read_agenttraj, write_shard

    episodes = read_agenttraj(args.source, experiment=args.experiment, split=args.split)
    meta = ShardMeta(
        experiment=args.experiment, config_hash="", model_id="agenttraj", seed=0
    )
    info = write_shard(args.output, episodes, meta)
    print(f"wrote {info.rows} episodes to {info.path}")
    return 0


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "sources", type=Path, nargs="+", help="shards (.parquet) or manifests (.json)"
    )
    p.add_argument(
        "-o", "--output", type=Path, required=True, help="AgentTraj JSON to write"
    )


@command(
    "export-agenttraj", "Write shards or manifests as AgentTraj JSON.", _export_args
)
def _export(args: argparse.Namespace) -> int:
    from evoflow.store import (
        load_episodes,
        read_shard,
        table_to_episodes,
        write_agenttraj,
    )

    episodes = []
    for source in args.sources:
        table = (
            load_episodes(source) if source.suffix == ".json" else read_shard(source)
        )
        episodes.extend(table_to_episodes(table))
    write_agenttraj(args.output, episodes)
    print(f"wrote {len(episodes)} items to {args.output}")
    return 0


# --- environments ------------------------------------------------------------


def _splits_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("envs", nargs="*", help="environments (default: all)")
    p.add_argument("--check", action="store_true", help="fail if a file would change")


@command(
    "make-splits",
    "Write data/splits/<env>.json from each env's task rules.",
    _splits_args,
)
def _make_splits(args: argparse.Namespace) -> int:
    from evoflow.envs import REGISTRY
    from evoflow.envs.splits import write_splits

    stale = []
    for name in args.envs or sorted(REGISTRY):
        path, changed = write_splits(name, check=args.check)
        if changed:
            stale.append(str(path))
        print(f"{name}: {path} {'differs' if changed and args.check else 'ok'}")
    if args.check and stale:
        raise EvoflowError(f"split files out of date: {', '.join(stale)}")
    return 0


def _calibrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweep", help="sweep file, e.g. config/calibration.yaml")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")


@command(
    "calibrate",
    "Run a training-settings sweep and write its table (see evoflow.calibration).",
    _calibrate_args,
)
def _calibrate(args: argparse.Namespace) -> int:
    from evoflow.calibration import load_sweep, run_sweep

    records = run_sweep(args.sweep, args.threads)
    print(
        f"{len(records)} trials recorded; table in {load_sweep(args.sweep)['report']}"
    )
    return 0


def _serve_args(p: argparse.ArgumentParser) -> None:
    from evoflow.envs import REGISTRY

    p.add_argument("env", choices=sorted(REGISTRY))
    p.add_argument(
        "--host", default="127.0.0.1", help="interface (default: localhost only)"
    )
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--max-sessions", type=int, default=256, help="live sessions allowed"
    )
    p.add_argument(
        "--idle-ttl",
        type=float,
        default=600.0,
        help="seconds before an idle session closes",
    )
    p.add_argument(
        "--max-body", type=int, default=64 * 1024, help="largest request body in bytes"
    )


@command(
    "serve-env",
    "Serve an environment over HTTP (evoflow and AgentGym routes).",
    _serve_args,
)
def _serve_env(args: argparse.Namespace) -> int:
    from evoflow.envs.server import serve

    print(
        f"serving {args.env} on http://{args.host}:{args.port} (Ctrl-C stops)",
        flush=True,
    )
    serve(
        args.env, args.host, args.port, args.max_sessions, args.idle_ttl, args.max_body
    )
    return 0


def _serve_policy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", default="smollm2-135m-instruct", help="alias, folder or hub id"
    )
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    p.add_argument("--max-context", type=int, default=4096)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)


@command(
    "serve-policy",
    "Serve a model behind a minimal OpenAI-compatible API.",
    _serve_policy_args,
)
def _serve_policy(args: argparse.Namespace) -> int:
    import uvicorn

    from evoflow.policy import make_policy
    from evoflow.policy.server import create_app

    policy = make_policy(args.backend, args.model, max_context=args.max_context)
    print(
        f"serving {args.model} on http://{args.host}:{args.port}/v1 (Ctrl-C stops)",
        flush=True,
    )
    uvicorn.run(create_app(policy), host=args.host, port=args.port, log_level="warning")
    return 0


def _explore_ui_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--results", default="results", help="folder of the store to explore"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="interface (localhost by default)"
    )
    p.add_argument("--port", type=int, default=8765)
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name to answer (e.g. the machine's DNS name when "
        "--host is 0.0.0.0); others are refused with 400",
    )


@command(
    "explore-ui",
    "Browse the trajectory store in a web browser (read-only).",
    _explore_ui_args,
)
def _explore_ui(args: argparse.Namespace) -> int:
    from evoflow.explorer.app import serve

    print(
        f"exploring {args.results} on http://{args.host}:{args.port} (Ctrl-C stops)",
        flush=True,
    )
    serve(args.results, args.host, args.port, tuple(args.allow_host))
    return 0


# --- federate ----------------------------------------------------------------


def _federate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="experiment config (YAML)")
    p.add_argument("--method", required=True, help="a federated method of the config")
    p.add_argument(
        "--workdir", default=".", help="results/, clients/ and federation/ go here"
    )
    p.add_argument("--superlink", help="HOST:PORT of a running SuperLink (default: start "
                                       "one and a SuperNode per client on localhost)")  # fmt: skip
    p.add_argument(
        "--root-certificates",
        help="CA certificate (PEM) of a TLS SuperLink given with --superlink",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow plaintext to a --superlink off this machine (refused otherwise)",
    )
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="a lost client leaves its round instead of stopping the federation",
    )
    p.add_argument(
        "--round-timeout",
        type=float,
        default=3600.0,
        help="seconds the server waits for a round's replies",
    )
    p.add_argument(
        "--join-timeout",
        type=float,
        default=120.0,
        help="seconds the server waits for every client's SuperNode",
    )
    p.add_argument("--timeout", type=float, help="seconds for the whole federation")


@command(
    "federate",
    "Run a federated method as a Flower deployment (SuperLink + SuperNodes).",
    _federate_args,
)
def _federate(args: argparse.Namespace) -> int:
    import signal

    from evoflow.federate.launch import federate

    # a plain `kill` stops the SuperLink and SuperNodes too (their cleanup runs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    summary = federate(args.config, args.method, args.workdir, superlink=args.superlink,
                       allow_partial=args.allow_partial, round_timeout=args.round_timeout,
                       timeout=args.timeout, root_certificates=args.root_certificates,
                       join_timeout=args.join_timeout, insecure=args.insecure)  # fmt: skip
    for row in summary["rounds"]:
        lost = f", lost: {', '.join(row['lost'])}" if row["lost"] else ""
        print(
            f"round {row['round']}: {row['seconds']:.1f} s, "
            f"clients: {', '.join(row['participants'])}{lost}"
        )
    return 0


def _timing_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", help="an experiment's log folder (logs/<experiment>)")


@command("timing", "Sum a finished run's job times per rule (its benchmark files).",
         _timing_args)  # fmt: skip
def _timing(args: argparse.Namespace) -> int:
    from evoflow.report.timing import rule_times, timing_markdown

    print(timing_markdown(rule_times(Path(args.logs) / "bench")), end="")
    return 0


# --- helmsman ----------------------------------------------------------------


def _helmsman_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", help="the research query (problem, data, requirement)")
    p.add_argument("--data", required=True,
                   help="an AgentFL-Bench task id (its offline substitute, seed 0) or a "
                        "data file in its npz layout")  # fmt: skip
    p.add_argument(
        "--out", required=True, help="folder of the run (resumes if it exists)"
    )
    p.add_argument("--model", default="smollm2-135m-instruct", help="served model name")
    p.add_argument("--backend", choices=["openai", "hf"], default="openai")
    p.add_argument(
        "--base-url", default="http://127.0.0.1:8000", help="openai backend root"
    )
    p.add_argument("--max-context", type=int, default=32768)
    approval = p.add_mutually_exclusive_group()
    approval.add_argument("--auto", action="store_true", help="approve plans unasked")
    approval.add_argument("--approval-file", help="read decisions from this JSON file")
    p.add_argument("--budget", type=int, default=10, help="repair attempts")
    p.add_argument("--sandbox-rounds", type=int, default=5)
    p.add_argument("--plan-rounds", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=4096)


@command(
    "helmsman",
    "Plan, write, simulate, diagnose and repair a Flower codebase for a query.",
    _helmsman_args,
)
def _helmsman(args: argparse.Namespace) -> int:
    import json

    from evoflow.helmsman.run import make_data, run_query
    from evoflow.policy import make_policy

    out = Path(args.out)
    data = Path(args.data)
    if not data.is_file():
        data = out / "data.npz"
        if not data.exists():
            make_data(args.data, [0], [data])
    options = {"max_context": args.max_context}
    if args.backend == "openai":
        options["base_url"] = args.base_url
    policy = make_policy(args.backend, args.model, **options)
    mode = "auto" if args.auto else "file" if args.approval_file else "terminal"
    agents = {"approval": mode, "budget": args.budget, "sandbox_rounds": args.sandbox_rounds,
              "plan_rounds": args.plan_rounds, "max_new_tokens": args.max_new_tokens}  # fmt: skip
    approval = Path(args.approval_file) if args.approval_file else None
    status = run_query(args.query, data, out, policy, agents, approval)
    print(json.dumps(status, indent=1))
    return 0 if status["status"] == "SUCCESS" else 1


# --- entry point ---------------------------------------------------------------


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evoflow", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--version", action="version", version=f"evoflow {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, arguments, handler) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        arguments(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.handler(args)
    except EvoflowError as exc:
        print(f"evoflow {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""Commands that run a system outside Snakemake: a Flower federation, Helmsman."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evoflow.cli.registry import command

# --- federate ----------------------------------------------------------------


def _federate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True,
                   help="experiment config (YAML)")  # fmt: skip
    p.add_argument("--method", required=True,
                   help="a federated method of the config")  # fmt: skip
    p.add_argument(
        "--workdir", default=".", help="results/, clients/ and federation/ go here"
    )
    p.add_argument("--superlink", help="HOST:PORT of a running SuperLink (default: start "
                                       "one and a SuperNode per client on localhost)")  # fmt: skip
    p.add_argument(
        "--root-certificates",
        help="CA certificate (PEM) of a TLS SuperLink given with --superlink "
        "(default: none - plaintext)",
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
    p.add_argument("--timeout", type=float,
                   help="seconds for the whole federation (default: none - no limit)")  # fmt: skip


@command(
    "federate",
    "Run a federated method as a Flower deployment (SuperLink + SuperNodes).",
    _federate_args,
    "evoflow federate --config config/config.yaml --method fedse --workdir fed-run",
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
    p.add_argument("--backend", choices=["openai", "hf"], default="openai",
                   help="openai: a served model at --base-url; hf: load it here")  # fmt: skip
    p.add_argument(
        "--base-url", default="http://127.0.0.1:8000", help="openai backend root"
    )
    p.add_argument("--max-context", type=int, default=32768,
                   help="prompt + reply tokens per agent call")  # fmt: skip
    approval = p.add_mutually_exclusive_group()
    approval.add_argument("--auto", action="store_true",
                          help="approve plans unasked (default: off - ask on the "
                               "terminal)")  # fmt: skip
    approval.add_argument("--approval-file",
                          help="read decisions from this JSON file (default: none - "
                               "ask on the terminal)")  # fmt: skip
    p.add_argument("--budget", type=int, default=10, help="repair attempts")
    p.add_argument("--sandbox-rounds", type=int, default=5,
                   help="rounds of a diagnostic sandbox run")  # fmt: skip
    p.add_argument("--plan-rounds", type=int, default=3,
                   help="plans drafted before the query is given up")  # fmt: skip
    p.add_argument("--max-new-tokens", type=int, default=4096,
                   help="token cap of one agent reply")  # fmt: skip


@command(
    "helmsman",
    "Plan, write, simulate, diagnose and repair a Flower codebase for a query.",
    _helmsman_args,
    'evoflow helmsman "Train a digit classifier across 10 hospitals" --data Q1 '
    "--out helm-run --auto",
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

"""Commands that serve: an environment, a policy, the trajectory explorer."""

from __future__ import annotations

import argparse
from pathlib import Path

from evoflow.cli.registry import command
from evoflow.errors import EvoflowError


def _serve_args(p: argparse.ArgumentParser) -> None:
    from evoflow.envs import REGISTRY

    p.add_argument("env", choices=sorted(REGISTRY), help="the environment served")
    p.add_argument(
        "--host", default="127.0.0.1", help="interface (default: localhost only)"
    )
    p.add_argument("--port", type=int, default=8000, help="TCP port")
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
    "evoflow serve-env maze --port 8001",
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
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf",
                   help="inference backend (vllm needs a GPU and the gpu extra)")  # fmt: skip
    p.add_argument("--max-context", type=int, default=4096,
                   help="prompt + reply tokens per request")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="interface")
    p.add_argument("--port", type=int, default=8000, help="TCP port")


@command(
    "serve-policy",
    "Serve a model behind a minimal OpenAI-compatible API.",
    _serve_policy_args,
    "evoflow serve-policy --model smollm2-135m-instruct --port 8000",
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
    p.add_argument("--port", type=int, default=8765, help="TCP port")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name to answer (e.g. the machine's DNS name when "
        "--host is 0.0.0.0), repeatable; others are refused with 400 "
        "(default: none)",
    )


@command(
    "explore-ui",
    "Browse the trajectory store in a web browser (read-only).",
    _explore_ui_args,
    "evoflow explore-ui --results results --port 8765",
)
def _explore_ui(args: argparse.Namespace) -> int:
    from evoflow.explorer.app import serve

    if not Path(args.results).is_dir():
        raise EvoflowError(f"results folder {args.results}/ does not exist (run the "
                           "workflow first, or name another with --results)")  # fmt: skip
    print(
        f"exploring {args.results} on http://{args.host}:{args.port} (Ctrl-C stops)",
        flush=True,
    )
    serve(args.results, args.host, args.port, tuple(args.allow_host))
    return 0

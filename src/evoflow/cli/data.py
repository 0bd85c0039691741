"""Commands over data: trajectory queries, configs, AgentTraj files, splits,
calibration sweeps and tables over seeds."""

from __future__ import annotations

import argparse
from pathlib import Path

from evoflow.cli.registry import command
from evoflow.errors import EvoflowError

# --- query -------------------------------------------------------------------


def _query_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("sql", nargs="?",
                   help="SQL over the views 'episodes' and 'turns' (default: none; "
                        "give SQL or --stats)")  # fmt: skip
    p.add_argument("--stats", action="store_true",
                   help="episodes, success rate, mean turns and tokens per experiment, source and env, instead of SQL")  # fmt: skip
    p.add_argument("--results", default="results",
                   help="folder scanned for trajectory shards (a run's results/)")  # fmt: skip
    p.add_argument("--format", choices=["table", "csv", "json"], default="table",
                   help="how rows are printed")  # fmt: skip
    p.add_argument("--max-rows", type=int, default=100,
                   help="rows shown in table format")  # fmt: skip


@command(
    "query",
    "Run SQL over every trajectory shard with DuckDB.",
    _query_args,
    'evoflow query "SELECT method, env, avg(success::INT) AS rate FROM episodes '
    "WHERE source = 'eval' GROUP BY ALL ORDER BY ALL\"",
    "evoflow query --stats --results results",
)
def _query(args: argparse.Namespace) -> int:
    import duckdb

    from evoflow.store.query import connect, find_shards, stats

    if not args.sql and not args.stats:
        raise EvoflowError("give SQL text or --stats")
    results = Path(args.results)
    if not results.is_dir():
        raise EvoflowError(f"results folder {results}/ does not exist (run the "
                           "workflow first, or name another with --results)")  # fmt: skip
    if not find_shards(results):
        raise EvoflowError(f"no trajectory shards (*.parquet) under {results}/ "
                           "(has a job written episodes yet?)")  # fmt: skip
    con = connect(results)
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


def config_files(args: argparse.Namespace) -> list[Path]:
    """The experiment files of a command: ``--config`` ones, then positional ones.

    Raises
    ------
    EvoflowError
        when neither names a file.
    """
    files = [*(args.config or []), *(args.paths or [])]
    if not files:
        raise EvoflowError("name an experiment config: --config FILE")
    return files


def _config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, action="append", metavar="FILE",
                   help="experiment YAML file (default: none; the file may also be "
                        "given without --config)")  # fmt: skip
    p.add_argument("paths", nargs="*", type=Path, metavar="FILE",
                   help="the same as --config FILE (default: none)")  # fmt: skip


def _check_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, action="append", metavar="FILE",
                   help="experiment YAML file; repeat it to lay files over each "
                        "other, as snakemake --configfile a b merges them "
                        "(default: none; files may also be given without --config)")  # fmt: skip
    p.add_argument("paths", nargs="*", type=Path, metavar="FILE",
                   help="the same as --config FILE, after those (default: none)")  # fmt: skip
    p.add_argument("--allow-paper-scale", action="store_true",
                   help="accept a config on the embedded model that inherits the "
                        "schema's paper-scale defaults (default: off - refuse it)")  # fmt: skip


@command(
    "check-config",
    "Validate an experiment config and print it with defaults and its sha256 "
    "(the hash a SuperNode pins with --node-config config_sha256=...).",
    _check_config_args,
    "evoflow check-config --config config/config.yaml --config config/ablations.yaml",
    "evoflow check-config my.yaml",
)
def _check_config(args: argparse.Namespace) -> int:
    import yaml

    from evoflow.config import check_scale, config_hash, load_config, load_raw

    files = config_files(args)
    config = load_config(*files)
    if not args.allow_paper_scale:
        check_scale(load_raw(*files), config, ", ".join(map(str, files)))
    print(yaml.safe_dump(config, sort_keys=False), end="")
    print(f"# sha256: {config_hash(config)}")
    return 0


@command(
    "tracking",
    "Where an experiment's MLflow runs are (tracking: {mlflow: true}) and the "
    "command that opens them in the MLflow UI.",
    _config_args,
    "evoflow tracking --config config/config.yaml",
)
def _tracking(args: argparse.Namespace) -> int:
    from evoflow.config import load_config
    from evoflow.tracking import enabled, tracking_uri, ui_command

    config = load_config(*config_files(args))
    state = "on" if enabled(config) else "off (tracking: {mlflow: true} turns it on)"
    print(f"# MLflow tracking: {state}; runs of {config['experiment']!r} at "
          f"{tracking_uri(config)}")  # fmt: skip
    print(ui_command(config))
    return 0


# --- AgentTraj ---------------------------------------------------------------


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", type=Path, help="AgentTraj JSON file")
    p.add_argument("output", type=Path, help="shard to write (.parquet)")
    p.add_argument("--experiment", required=True,
                   help="experiment name stored with every episode")  # fmt: skip
    p.add_argument("--split", default="train", help="split stored with every episode")


@command(
    "import-agenttraj",
    "Convert AgentTraj JSON into a trajectory shard.",
    _import_args,
    "evoflow import-agenttraj AgentTraj.json demos.parquet --experiment mine",
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
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="AgentTraj JSON to write")  # fmt: skip


@command(
    "export-agenttraj",
    "Write shards or manifests as AgentTraj JSON.",
    _export_args,
    "evoflow export-agenttraj results/embedded/expert/env=maze/demos.parquet "
    "-o maze.json",
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
    p.add_argument("--check", action="store_true",
                   help="write nothing; fail if a file would change")  # fmt: skip


@command(
    "make-splits",
    "Write data/splits/<env>.json from each env's task rules.",
    _splits_args,
    "evoflow make-splits --check maze wordle",
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
    p.add_argument("--threads", type=int, default=2, help="CPU threads")


@command(
    "calibrate",
    "Run a training-settings sweep and write its table (see evoflow.calibration).",
    _calibrate_args,
    "evoflow calibrate config/calibration.yaml --threads 2",
)
def _calibrate(args: argparse.Namespace) -> int:
    from evoflow.calibration import load_sweep, run_sweep

    records = run_sweep(args.sweep, args.threads)
    print(
        f"{len(records)} trials recorded; table in {load_sweep(args.sweep)['report']}"
    )
    return 0


# --- seeds -------------------------------------------------------------------


def _seeds_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("reports", nargs="+",
                   help="finished report folders (reports/<experiment>) or their outcomes.csv")  # fmt: skip
    p.add_argument("--diff", nargs=2, metavar=("A", "B"), action="append", default=[],
                   help="also compare method A with B (paired, over runs); repeat for "
                        "more pairs; the pairs the first report compared are always "
                        "shown (default: none)")  # fmt: skip


@command("seeds", "Table 1 over runs with different seeds: mean and 95 % interval "
         "per cell, and paired differences over runs.", _seeds_args,
         "evoflow seeds reports/embedded reports/embedded-seed1 --diff fedse fedit")  # fmt: skip
def _seeds(args: argparse.Namespace) -> int:
    from evoflow.report.seeds import markdown, read_report

    reports = [read_report(path) for path in args.reports]
    print(markdown(reports, [tuple(pair) for pair in args.diff]), end="")
    return 0

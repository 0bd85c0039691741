"""Commands of multi-seed studies: run a study config's seeds, pool its claims."""

from __future__ import annotations

import argparse
from pathlib import Path

from evoflow.cli.registry import command


def _study_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="a study config (config/study/*.yaml)")
    p.add_argument("--cores", type=int, default=2,
                   help="cores Snakemake may use per seed")  # fmt: skip
    p.add_argument("--reports", default="reports",
                   help="where study.json goes (the seeds' reports go to "
                        "reports/<experiment>-s<seed>, as every run's)")  # fmt: skip
    p.add_argument("--seeds", nargs="+", type=int, metavar="SEED",
                   help="run only these of the study's seeds (the record keeps "
                        "the others' times): a study split over sittings")  # fmt: skip


@command(
    "study",
    "Run a study config once per seed of its study section (each seed its own "
    "experiment <experiment>-s<seed>) and record each seed's wall time and "
    "machine; rerun it to resume: finished seeds are skipped, and an "
    "interrupted seed's time "
    "so far (saved every minute) is added to its resumed run's.",
    _study_args,
    "evoflow study config/study/fedse.yaml --cores 2",
)
def _study(args: argparse.Namespace) -> int:
    from evoflow.study import run_study

    seeds = tuple(args.seeds) if args.seeds else None
    record = run_study(args.config, cores=args.cores, reports=args.reports, seeds=seeds)
    for seed, seconds in record["seeds"].items():
        print(f"seed {seed}: {seconds / 60:.1f} min")
    return 0


def _phenomena_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("configs", nargs="+", help="study configs whose seeds have run")
    p.add_argument("--reports", nargs="+", action="extend", metavar="FOLDER",
                   help="folders holding the seeds' reports (default: reports); "
                        "with several, each seed is read from the first that "
                        "holds it (a study's seeds may be kept in several)")  # fmt: skip
    p.add_argument("--out", help="write the table here too (Markdown)")


@command(
    "phenomena",
    "Pool each study's seeds per claim: the paired difference over seeds and "
    "tasks with its 95 % interval and p-value, and whether the claim holds, "
    "is reversed or is not resolved at this scale. Helmsman's baseline study "
    "(helmsman.study) gets a section of its own: each task's specialised method "
    "against FedAvg over the partition seeds.",
    _phenomena_args,
    "evoflow phenomena config/study/fedse.yaml --out reports/phenomena.md",
)
def _phenomena(args: argparse.Namespace) -> int:
    from evoflow.atomic import write_text
    from evoflow.report.phenomena import phenomena_report

    text = phenomena_report(args.configs, args.reports or ["reports"])
    if args.out:
        write_text(Path(args.out), text)
    print(text, end="")
    return 0

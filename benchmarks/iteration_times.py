"""Time per method round (AgentEvol: per iteration) of a finished run.

Reads the start and end times Snakemake records for every output in
``.snakemake/metadata`` and sums the job times under
``results/<experiment>/<method>/round=<r>/`` (exploration, buffers, merge,
training and evaluation of that round). Run in the folder the workflow ran in:

    python benchmarks/iteration_times.py agentevol
"""

from __future__ import annotations

import argparse
import json
import re
from base64 import urlsafe_b64decode
from collections import defaultdict
from pathlib import Path


def recorded_jobs(metadata: Path):
    """(output path, rule, start, seconds) of every output Snakemake recorded."""
    for record in metadata.rglob("*"):
        if not record.is_file() or record.name.startswith("@"):
            continue
        parts = [p.removeprefix("@") for p in record.relative_to(metadata).parts]
        path = urlsafe_b64decode("".join(parts)).decode()
        data = json.loads(record.read_text())
        if data.get("starttime") and data.get("endtime"):
            start = data["starttime"]
            yield path, data.get("rule", "?"), start, data["endtime"] - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--metadata", type=Path, default=Path(".snakemake/metadata"))
    args = parser.parse_args()
    pattern = re.compile(rf"^results/{re.escape(args.experiment)}/([^/]+)/round=(\d+)/")
    seconds: dict[tuple[str, int], float] = defaultdict(float)
    rules: dict[tuple[str, int], set[str]] = defaultdict(set)
    seen = set()
    for path, rule, start, took in recorded_jobs(args.metadata):
        match = pattern.match(path)
        if match is None:
            continue
        group = (match.group(1), int(match.group(2)))
        # a job with several outputs counts once (their start times differ by ms)
        key = (rule, group, round(start))
        if key in seen:
            continue
        seen.add(key)
        seconds[group] += took
        rules[group].add(rule)
    print(f"{'method':<22} {'round':>5} {'minutes':>8}  jobs")
    for (method, index), took in sorted(seconds.items()):
        jobs = ", ".join(sorted(rules[(method, index)]))
        print(f"{method:<22} {index:>5} {took / 60:>8.1f}  {jobs}")


if __name__ == "__main__":
    main()

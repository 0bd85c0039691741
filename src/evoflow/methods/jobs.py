"""What one model job takes from the experiment config: the same dictionaries
whether Snakemake passes them as rule params or a Flower client computes them
on its own machine (so both paths play, train and hash identically)."""

from __future__ import annotations

from evoflow.methods.layout import EXPERT


def runtime_settings(
    config: dict, envs, fields, generation: dict | None = None
) -> dict:
    """Model, sampling (``generation``, default the config's) and the listed
    ``fields`` of ``envs``: editing anything else reruns nothing."""
    return {
        "experiment": config["experiment"],
        "seed": config["seed"],
        "model": config["model"],
        "generation": generation or config["generation"],
        "envs": {env: {f: config["envs"][env][f] for f in fields} for env in envs},
    }


def expert_settings(config: dict, env: str, expert_set: str = EXPERT) -> dict:
    """An expert set's demonstration settings for one env: the count is
    ``demos``, or ``demos_large`` for the large set (null: all tasks)."""
    settings = {k: config["envs"][env][k]
                for k in ("demos", "demos_file", "max_turns", "strata")}  # fmt: skip
    if expert_set != EXPERT:
        settings["demos"] = config["envs"][env]["demos_large"]
    return settings

"""evoflow: self-evolving LLM agents as one reproducible Snakemake workflow."""

from __future__ import annotations

__version__ = "0.1.0"

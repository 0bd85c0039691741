"""Method families: each turns configured methods into jobs and their inputs.

``registry`` holds the one list of kinds; ``layout`` spells every artifact
path; one module per family (``fedse``) wires its jobs as plain, tested
Python that the workflow's rules call.
"""

from evoflow.methods.base import ALL_CLIENTS, POOLED, Kind, Method
from evoflow.methods.layout import Layout
from evoflow.methods.registry import (
    ABLATION_KINDS,
    FAMILIES,
    KINDS,
    family,
    method_title,
    methods_from_config,
)

__all__ = [
    "ABLATION_KINDS",
    "ALL_CLIENTS",
    "FAMILIES",
    "KINDS",
    "POOLED",
    "Kind",
    "Layout",
    "Method",
    "family",
    "method_title",
    "methods_from_config",
]

"""Exceptions that carry a user-facing message naming what is wrong."""

from __future__ import annotations


class EvoflowError(Exception):
    """Base class: the message alone explains the problem; no traceback is needed."""


class ConfigError(EvoflowError, ValueError):
    """A configuration file or value is invalid."""


class StoreError(EvoflowError):
    """A trajectory shard or manifest is missing, corrupt, foreign or changed."""

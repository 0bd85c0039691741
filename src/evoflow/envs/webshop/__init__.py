"""WebShop-lite: a generated web store with BM25 search and WebShop's reward.

See ``docs/reference/environments.md`` for what is kept from WebShop and what differs.
"""

from __future__ import annotations

from evoflow.envs.webshop.env import WebShopEnv

__all__ = ["WebShopEnv"]

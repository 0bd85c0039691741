"""Key/value caches of the ``hf`` backend.

Two kinds live here:

- ``PrefixStore`` keeps, between calls, each episode's token ids and their
  keys/values (one ``(heads, length, dim)`` pair per layer), so the next turn of
  an episode encodes only what is new. The longest common token prefix of the
  stored ids and the new prompt is reused, so a history that tokenizes
  differently the second time is still handled exactly.
- ``shared_prefixes`` finds rows of one call whose prompts open with the same
  tokens (an env's system prompt and instructions), so the backend encodes that
  opening once and every such row starts from it. It depends only on the
  call's own rows, never on earlier calls, so replies stay reproducible.
- ``slot_cache`` builds the cache one ``generate`` call decodes into: storage
  for every row is allocated once, sized for the reused prefix, the new prompt
  tokens and every token the call may generate, so appending a step never
  copies what is cached. Rows that finished can be dropped from the batch
  (``Cache.batch_select_indices``) so they stop costing attention reads.

Rows of a batch hold histories of different lengths. Each row's reused prefix
is right-aligned in the ``past`` leading columns (``[pad | cached]``), and the
attention mask says which columns are real.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, DynamicLayer


class SlotLayer(DynamicLayer):
    """One layer's keys and values for a batch, in storage sized for the call."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self._length = 0
        self._keys = self._values = None

    def reserve(self, like: torch.Tensor, rows: int, length: int) -> None:
        """Allocate storage shaped like ``like`` (rows, heads, -, dim); the first
        ``length`` columns count as cached (zeros until ``put`` fills them)."""
        self._allocate(like, like, rows)
        self._length = length
        self._expose()

    def put(self, row: int, start: int, keys: torch.Tensor, values: torch.Tensor):
        """Copy one row's ``(heads, n, dim)`` keys/values to columns ``start…``."""
        self._keys[row, :, start : start + keys.shape[-2]] = keys
        self._values[row, :, start : start + values.shape[-2]] = values

    def update(self, key_states, value_states, *args, **kwargs):
        if self._keys is None:
            self._allocate(key_states, value_states, key_states.shape[0])
        end = self._length + key_states.shape[-2]
        if end > self.capacity:
            raise RuntimeError(f"batch cache holds {self.capacity} tokens, asked {end}")
        self._keys[..., self._length : end, :] = key_states
        self._values[..., self._length : end, :] = value_states
        self._length = end
        self._expose()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self._keys is not None:
            indices = indices.to(self._keys.device)
            self._keys = self._keys[indices]
            self._values = self._values[indices]
            self._expose()

    def _allocate(self, keys: torch.Tensor, values: torch.Tensor, rows: int) -> None:
        """Zeroed storage for ``rows`` rows, shaped and typed like ``keys``/``values``."""
        heads, capacity = keys.shape[-3], self.capacity
        self._keys = keys.new_zeros((rows, heads, capacity, keys.shape[-1]))
        self._values = values.new_zeros((rows, heads, capacity, values.shape[-1]))
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True

    def _expose(self) -> None:
        self.keys = self._keys[..., : self._length, :]
        self.values = self._values[..., : self._length, :]


@dataclass
class Prefix:
    """Token ids of an episode so far and their keys/values, one pair per layer."""

    ids: list[int]
    layers: list[tuple[torch.Tensor, torch.Tensor]]  # each (heads, len, dim)


Match = tuple[int, Prefix | None]  # reusable prompt tokens, and where they are


class PrefixStore:
    """Per-episode caches, keyed by (episode key, adapter tag)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str | None], Prefix] = {}

    def match(self, key, prompt: list[int]) -> Match:
        """How many leading prompt tokens the episode's cache already holds."""
        cached = self._entries.get(key) if key is not None else None
        if cached is None:
            return 0, None
        return _common(cached.ids, prompt[:-1]), cached  # at least one token is fed

    def keep(self, key, ids: list[int], cache: Cache, row: int, columns) -> None:
        """Store row ``row`` of a batch cache; ``columns`` marks its real tokens."""
        self._entries[key] = Prefix(
            ids=ids,
            layers=[
                (
                    layer.keys[row][:, columns].clone(),
                    layer.values[row][:, columns].clone(),
                )
                for layer in cache.layers
            ],
        )

    def episodes(self) -> set[str]:
        """Keys of the episodes with a stored cache."""
        return {key for key, _ in self._entries}

    def forget(self, keys) -> None:
        gone = set(keys)
        for cache_key in [k for k in self._entries if k[0] in gone]:
            del self._entries[cache_key]

    def clear(self) -> None:
        self._entries.clear()


def shared_prefixes(
    prompts: list[list[int]], tags: list, rows: list[int], minimum: int
) -> list[tuple[list[int], int]]:
    """Rows (of ``rows``) whose prompts share at least ``minimum`` leading tokens
    under the same adapter ``tags``: ``(members, length)`` per cluster of two or
    more, ``length`` leaving every member at least one token to encode.

    Prompts are sorted, so a cluster is a run of neighbours and its common
    prefix is the shortest common prefix of neighbouring pairs.
    """
    order = sorted(rows, key=lambda r: (str(tags[r]), prompts[r]))
    clusters: list[tuple[list[int], int]] = []
    for r in order:
        if clusters and tags[clusters[-1][0][-1]] == tags[r]:
            members, length = clusters[-1]
            n = min(
                _common(prompts[members[-1]], prompts[r]), length, len(prompts[r]) - 1
            )
            if n >= minimum:
                clusters[-1] = (members + [r], n)
                continue
        clusters.append(([r], len(prompts[r]) - 1))
    return [(members, n) for members, n in clusters if len(members) > 1]


def _common(a: list[int], b: list[int]) -> int:
    n, limit = 0, min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def slot_cache(matches: list[Match], past: int, capacity: int) -> Cache:
    """A batch cache with each row's reused prefix right-aligned in ``past`` columns."""
    template = next((c.layers for _, c in matches if c is not None), None)
    if template is None or past == 0:
        return Cache(layer_class_to_replicate=lambda: SlotLayer(capacity))
    layers = []
    for index, (k0, _) in enumerate(template):
        layer = SlotLayer(capacity)
        layer.reserve(k0.unsqueeze(0), len(matches), past)
        for row, (n, cached) in enumerate(matches):
            if n:
                keys, values = cached.layers[index]
                layer.put(row, past - n, keys[:, :n], values[:, :n])
        layers.append(layer)
    return Cache(layers=layers)

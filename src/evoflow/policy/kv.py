"""Key/value caches of the ``hf`` backend.

Two kinds live here:

- ``PrefixStore`` keeps, between calls, each episode's token ids and their
  keys/values (one ``(heads, length, dim)`` pair per layer), so the next turn of
  an episode encodes only what is new. The longest common token prefix of the
  stored ids and the new prompt is reused, so a history that tokenizes
  differently the second time is still handled exactly. An episode's first
  turn reuses a *shared* prefix instead: the first prompts seen under each
  adapter are kept too, and a new episode starts from the longest token prefix
  it has in common with one of them — the system prompt and instructions every
  episode of an env begins with are encoded once, not once per episode.
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


SHARED_KEPT = 16  # first prompts kept for new episodes, all adapters together
SHARED_MIN_TOKENS = 32  # a prompt sharing fewer tokens with every kept one is new


def common_prefix(cached: Prefix, prompt: list[int]) -> int:
    """Leading tokens ``prompt`` shares with ``cached`` (at least one is fed)."""
    limit = min(len(cached.ids), len(prompt) - 1)
    n = 0
    while n < limit and cached.ids[n] == prompt[n]:
        n += 1
    return n


class PrefixStore:
    """Per-episode caches, keyed by (episode key, adapter tag), and the shared
    first prompts of each adapter tag."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str | None], Prefix] = {}
        self._shared: list[tuple[str | None, Prefix]] = []  # least recently used first

    def match(self, key, prompt: list[int]) -> Match:
        """How many leading prompt tokens a cache already holds: the episode's
        own, else (a first turn) the shared prompt with the longest overlap."""
        if key is None:
            return 0, None
        cached = self._entries.get(key)
        if cached is not None:
            return common_prefix(cached, prompt), cached
        n, best = max(((common_prefix(c, prompt), (tag, c)) for tag, c in self._shared
                       if tag == key[1]), key=lambda m: m[0], default=(0, None))  # fmt: skip
        if not n:
            return 0, None
        self._shared.remove(best)  # the most recently used last
        self._shared.append(best)
        return n, best[1]

    def keep(
        self, key, ids: list[int], cache: Cache, row: int, columns, prompt: int
    ) -> None:
        """Store row ``row`` of a batch cache (``columns`` marks its real tokens,
        the first ``prompt`` of ``ids`` are the prompt); an episode's first turn
        also offers its prompt for sharing."""
        first = key not in self._entries
        self._entries[key] = _row_prefix(ids, cache, row, columns)
        if first:
            self._share(key[1], self._entries[key], prompt)

    def _share(self, tag, episode: Prefix, prompt: int) -> None:
        """Keep a first prompt for later episodes under adapter ``tag``, unless a
        kept one already shares ``SHARED_MIN_TOKENS`` with it; the least recently
        used one makes room (an RL run's adapters change every step, so the
        store is bounded across tags, not per tag)."""
        ids = episode.ids[:prompt]
        if any(t == tag and common_prefix(c, ids + [-1]) >= SHARED_MIN_TOKENS
               for t, c in self._shared):  # fmt: skip
            return
        if len(self._shared) >= SHARED_KEPT:
            self._shared.pop(0)
        layers = [
            (k[:, :prompt].clone(), v[:, :prompt].clone()) for k, v in episode.layers
        ]
        self._shared.append((tag, Prefix(ids, layers)))  # copies: episodes are freed

    def episodes(self) -> set[str]:
        """Keys of the episodes with a stored cache."""
        return {key for key, _ in self._entries}

    def forget(self, keys) -> None:
        gone = set(keys)
        for cache_key in [k for k in self._entries if k[0] in gone]:
            del self._entries[cache_key]

    def clear(self) -> None:
        self._entries.clear()
        self._shared.clear()


def _row_prefix(ids: list[int], cache: Cache, row: int, columns) -> Prefix:
    """Row ``row`` of a batch cache (its real ``columns``) as a ``Prefix``."""
    return Prefix(
        ids=ids,
        layers=[
            (layer.keys[row][:, columns].clone(), layer.values[row][:, columns].clone())
            for layer in cache.layers
        ],
    )


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

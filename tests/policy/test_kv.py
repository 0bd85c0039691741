"""The shared first-prompt store of ``PrefixStore``, on hand-made caches."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from evoflow.policy.kv import SHARED_KEPT, SHARED_MIN_TOKENS, PrefixStore


def cache_of(length: int, value: float):
    """A one-row, one-layer batch cache whose keys/values all equal ``value``."""
    tensor = torch.full((1, 1, length, 2), value)
    return SimpleNamespace(layers=[SimpleNamespace(keys=tensor, values=tensor)])


def test_a_new_episode_reuses_the_longest_shared_prompt_of_its_adapter():
    store, system = PrefixStore(), list(range(100, 100 + SHARED_MIN_TOKENS + 8))
    first = system + [1, 2, 3]
    store.keep(("e0", "a"), first + [9], cache_of(len(first) + 1, 1.0), 0,
               torch.ones(len(first) + 1, dtype=torch.bool), len(first))  # fmt: skip
    n, cached = store.match(("e1", "a"), system + [4, 5])
    assert n == len(system) and cached.ids == first  # the prompt, not the reply
    assert cached.layers[0][0].shape == (1, len(first), 2)
    assert store.match(("e1", "b"), system + [4, 5]) == (0, None)  # other adapter
    store.forget(["e0"])  # an episode's end leaves the shared prompt
    assert store.match(("e2", "a"), system + [6])[0] == len(system)


def test_shared_prompts_stay_bounded_across_adapters():
    store = PrefixStore()
    for step in range(3 * SHARED_KEPT):  # an RL run: a new adapter every step
        ids = [step] * 40
        store.keep((f"e{step}", f"tag{step}"), ids, cache_of(40, float(step)), 0,
                   torch.ones(40, dtype=torch.bool), 40)  # fmt: skip
    assert len(store._shared) == SHARED_KEPT
    last = 3 * SHARED_KEPT - 1
    assert store.match(("new", f"tag{last}"), [last] * 41)[0] == 40
    assert store.match(("new", "tag0"), [0] * 41) == (0, None)  # evicted

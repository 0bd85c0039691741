"""Run inside the vLLM environment (``scripts/setup/vllm.sh``) by
``test_vllm_backend.py``: one engine, every check's generations written as JSON.

    .venv-vllm/bin/python tests/policy/vllm_probe.py REQUEST.json OUT.json

REQUEST holds the model folder, an adapter folder, the chats and each chat's
listed actions; OUT the token ids of each call, keyed by the call's name (and
the constrained call's reply texts).
"""

from __future__ import annotations

import json
import sys
import time

CONSTRAINED_TOKENS = 40  # the embedded default's generation.max_new_tokens


def main(request_path: str, out_path: str) -> None:
    from evoflow.policy.base import ActionChoice, SamplingParams
    from evoflow.policy.vllm import VLLMPolicy

    request = json.loads(open(request_path).read())
    chats, adapter = request["chats"], request["adapter"]
    n = len(chats)
    start = time.perf_counter()
    policy = VLLMPolicy(request["model"], max_context=2048, max_lora_rank=8)
    started = time.perf_counter() - start
    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    hot = SamplingParams(temperature=1.0, max_new_tokens=24)
    mixed = [adapter if i % 2 else None for i in range(n)]
    calls = {
        "base": (greedy, None, None),
        "adapter": (greedy, adapter, None),
        "mixed": (greedy, mixed, None),
        "base_again": (greedy, None, None),  # served from the prefix cache
        "seeded": (hot, None, list(range(n))),
        "seeded_again": (hot, None, list(range(n))),
        "other_seeds": (hot, None, [1000 + i for i in range(n)]),
    }
    out = {"start_seconds": started}
    for name, (params, adapters, seeds) in calls.items():
        t = time.perf_counter()
        generations = policy.generate(chats, params, adapters, seeds=seeds)
        out[name] = [g.token_ids for g in generations]
        out[f"{name}_seconds"] = time.perf_counter() - t
    choices = [ActionChoice(tuple(c["actions"]), c["form"], tuple(c["slots"]))
               for c in request["choices"]]  # fmt: skip
    constrained = SamplingParams(temperature=0.0, max_new_tokens=CONSTRAINED_TOKENS)
    for name, adapters in (("constrained", None), ("constrained_adapter", adapter)):
        t = time.perf_counter()
        generations = policy.generate(chats, constrained, adapters, choices=choices)
        out[f"{name}_seconds"] = time.perf_counter() - t
        out[name] = [g.text for g in generations]
    policy.close()
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":  # vLLM's engine spawns workers that re-import this
    main(sys.argv[1], sys.argv[2])

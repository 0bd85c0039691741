"""Evaluation throughput at the paper's turn caps: our hf backend vs today's.

One evaluation job as the workflow runs it: a batch-wide LoRA adapter (the
global adapter of a round), greedy decoding, ``--tasks`` test tasks of each of
the five environments played together at their paper turn caps (BabyAI 20,
WebShop 10, TextCraft 20, Maze 15, Wordle 8) with the same ``--width``, by the
rollout engine. The adapter is a fresh PEFT LoRA (B = 0), so replies are the
pre-trained model's — long, rarely valid — and every episode runs to its cap:
the expensive case, and the one a Pre-Trained row costs.

``today`` is ``HFPolicy`` of commit ``baseline.BASELINE``, loaded from git
(one left-padded prefill, finished rows decoded to the end, the LoRA applied
unmerged, fp32 on CPU). In fp32 (``EVOFLOW_CPU_BF16=0``) both play identical
episodes — the script counts them; with bf16 weights (``auto`` on a CPU with
bf16 units) rounding changes some greedy choices, so fewer are identical.
Figures: episodes per hour, the ratio (goal ≥ 4×), and model compute as a
share of this machine's roofline (``roofline.py``) in the precision used. ``--compile`` also times
``torch.compile`` of our model (compile time included).

    python benchmarks/eval_throughput.py [--tasks 3] [--width 15] [--threads 1]
        [--variants today ours] [--compile]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import roofline
import torch

from evoflow.envs import make_env
from evoflow.policy.base import SamplingParams
from evoflow.rollout.engine import Job, RolloutSpec, play

MODEL = "smollm2-135m-instruct"
CAPS = {"babyai": 20, "webshop": 10, "textcraft": 20, "maze": 15, "wordle": 8}


def zero_adapter(folder: Path) -> str:
    """A PEFT LoRA r=8 on all linear layers with B = 0 (the model unchanged)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from evoflow.policy.models import resolve_model

    base = AutoModelForCausalLM.from_pretrained(resolve_model(MODEL))
    lora = LoraConfig(r=8, lora_alpha=16, target_modules="all-linear")
    get_peft_model(base, lora).save_pretrained(folder)
    return str(folder)


def jobs(adapter: str, tasks: int) -> list[Job]:
    out = []
    for env, cap in CAPS.items():
        spec = RolloutSpec(
            experiment="bench", method="eval", split="test", source="eval",
            horizon=cap, adapter=adapter,
            sampling=SamplingParams(temperature=0.0, max_new_tokens=48),
        )  # fmt: skip
        ids = make_env(env).task_ids("test")
        out += [Job(env, t, 0, spec) for t in ids[:: max(1, len(ids) // tasks)][:tasks]]
    return out


def policy(variant: str, compile_model: bool):
    if variant == "today":
        import baseline

        return baseline.load("src/evoflow/policy/hf.py").HFPolicy(
            MODEL, max_context=4096, batch_size=64
        )
    from evoflow.policy.hf import HFPolicy

    made = HFPolicy(MODEL, max_context=4096, batch_size=64)
    if compile_model:
        made.base = torch.compile(made.base, dynamic=True)
    return made


FED = {"prefill": 0, "decode": 0}  # tokens fed to any Llama model so far


def count_forward() -> None:
    """Count the tokens every Llama forward pass is fed (prompt vs decode)."""
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    original = LlamaForCausalLM.forward

    def forward(self, *args, **kwargs):
        ids = kwargs.get("input_ids")
        FED["decode" if ids.shape[1] == 1 else "prefill"] += ids.numel()
        return original(self, *args, **kwargs)

    LlamaForCausalLM.forward = forward


def run(variant: str, adapter: str, args):
    made = policy(variant, args.compile and variant == "ours")
    before = dict(FED)
    factories = {env: (lambda e=env: make_env(e)) for env in CAPS}
    start = time.perf_counter()
    episodes = play(made, factories, jobs(adapter, args.tasks), args.width, False)
    seconds = time.perf_counter() - start
    precision = "bf16" if getattr(made, "dtype", None) == torch.bfloat16 else "fp32"
    return episodes, seconds, {k: FED[k] - before[k] for k in FED}, precision


def model_flops(counts: dict, episodes) -> float:
    """≈ 2 × linear parameters per token fed, plus the LM head per reply token."""
    linear, head = 106_168_896, 28_311_552  # SmolLM2-135M: 30 layers; 49,152 × 576
    fed = counts["prefill"] + counts["decode"]
    replies = sum(e.n_tokens for e in episodes)
    return 2 * (linear * fed + head * replies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=3, help="test tasks per env")
    parser.add_argument("--width", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", nargs="+", default=["today", "ours"])
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    count_forward()
    roof = roofline.measure(args.threads)
    print(roofline.describe(roof, args.threads))
    with tempfile.TemporaryDirectory() as tmp:
        adapter = zero_adapter(Path(tmp) / "adapter")
        results = {v: run(v, adapter, args) for v in args.variants}
    played = {
        v: [[m.content for m in e.messages] for e in r[0]] for v, r in results.items()
    }
    for variant, (episodes, seconds, counts, precision) in results.items():
        turns = sum(e.n_turns for e in episodes)
        share = model_flops(counts, episodes) / seconds / 1e9 / roof[precision]
        print(f"{variant:>6}: {len(episodes)} episodes, {turns} turns in {seconds:.0f} s "
              f"= {3600 * len(episodes) / seconds:.0f} episodes/h; fed {counts['prefill']} "
              f"prompt + {counts['decode']} decode tokens; {share:.1%} of the {precision} "
              f"roofline")  # fmt: skip
    if {"today", "ours"} <= set(results):
        same = sum(a == b for a, b in zip(played["today"], played["ours"], strict=True))
        ratio = results["today"][1] / results["ours"][1]
        print(f"episodes/h ours / today: {ratio:.2f}x (goal ≥ 4); identical "
              f"episodes {same}/{len(played['ours'])}")  # fmt: skip


if __name__ == "__main__":
    main()

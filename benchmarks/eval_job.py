"""One embedded evaluation job: today's hf backend against an earlier commit's.

Both play the greedy test episodes of ``config/config.yaml`` (its strata, turn
caps, width and action constraint; ``--tasks`` per env, all of them by default)
with one batch-wide LoRA adapter, as an evaluation job of a round does: the
adapter is merged into a copy of the weights, whose parameters PEFT has frozen.
``--adapter`` takes a trained one; by default it is a fresh LoRA (B = 0), so the
replies are the pre-trained model's. The earlier side loads ``hf.py`` and
``attention.py`` as they were at ``--against`` (``baseline.load``); everything
else is today's. Both run in this process, one after the other (today's first, so
any warm-up falls on it), at ``--threads``. The FLOP count is SmolLM2-135M's.

Prints per side the wall time, the model time split into prefill and decoding
passes (and the decoding passes' mean rows), the tokens fed and their share of
this machine's roofline (``roofline.py``); then the ratio and how many episodes
are identical message for message.

    python benchmarks/eval_job.py [--against 25fa6cf] [--tasks 20] [--threads 1]
        [--adapter FOLDER]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

import baseline
import roofline
import torch
from eval_throughput import zero_adapter
from openvino_backend import capped, play

from evoflow.config import load_config

AGAINST = "25fa6cf"  # before the LM head read a gathered last position


def hf_class(commit: str | None):
    """``HFPolicy`` of today, or of ``commit`` with that commit's attention."""
    if commit is None:
        from evoflow.policy.hf import HFPolicy

        return HFPolicy
    attention = baseline.load("src/evoflow/policy/attention.py", commit)
    attention.NAME = (
        f"baseline_{commit}_sdpa"  # its own entry in transformers' registry
    )
    hf = baseline.load("src/evoflow/policy/hf.py", commit)
    hf.attention_implementation = attention.attention_implementation
    return hf.HFPolicy


def timed(policy) -> dict:
    """Time and count every forward pass of ``policy``: prefill vs decoding."""
    spent = {"prefill": 0.0, "decode": 0.0, "steps": 0, "rows": 0, "prompt": 0}
    forward_for = policy._forward_for

    def wrapped(tags):
        forward = forward_for(tags)

        def measured(ids, mask, positions, cache, rows):
            start = time.perf_counter()
            out = forward(ids, mask, positions, cache, rows)
            kind = "decode" if ids.shape[1] == 1 else "prefill"
            spent[kind] += time.perf_counter() - start
            if kind == "decode":
                spent["steps"] += 1
                spent["rows"] += ids.shape[0]
            else:
                spent["prompt"] += int(ids.numel())  # padding included
            return out

        return measured

    policy._forward_for = wrapped
    return spent


def run(commit, config, envs, adapter):
    """The evaluation episodes played by ``commit``'s backend (None: today's)."""
    model = config["model"]
    policy = hf_class(commit)(model["name"], max_context=model["max_context"],
                              batch_size=model["batch_size"], dtype=model["dtype"])  # fmt: skip
    spent = timed(policy)
    episodes, seconds = play(policy, config, envs, adapter)
    precision = "bf16" if policy.dtype == torch.bfloat16 else "fp32"
    policy.close()
    del policy
    gc.collect()  # the timing wrapper holds the policy in a reference cycle
    return episodes, seconds, spent, precision


def report(name, played, roof) -> None:
    episodes, seconds, spent, precision = played
    replies = sum(e.n_tokens for e in episodes)
    fed = spent["prompt"] + spent["rows"]
    flops = 2 * (106_168_320 * fed + 28_311_552 * replies)
    rows = spent["rows"] / max(1, spent["steps"])
    print(f"{name}: {len(episodes)} episodes, {sum(e.n_turns for e in episodes)} turns, "
          f"{sum(e.success for e in episodes)} solved in {seconds:.1f} s; prefill "
          f"{spent['prefill']:.1f} s ({spent['prompt']} tokens, "
          f"{spent['prompt'] / max(spent['prefill'], 1e-9):.0f}/s), decoding "
          f"{spent['decode']:.1f} s ({spent['steps']} passes, {rows:.1f} rows each); "
          f"{flops / seconds / 1e9 / roof[precision]:.1%} of the {precision} roofline")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=AGAINST, help="the earlier commit")
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--tasks", type=int, help="test tasks per env (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--adapter", help="a PEFT LoRA folder (default: B = 0)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = load_config(args.config)
    envs = {e: c if args.tasks is None else capped(c, args.tasks)
            for e, c in config["envs"].items()}  # fmt: skip
    roof = roofline.measure(args.threads)
    print(roofline.describe(roof, args.threads))
    with tempfile.TemporaryDirectory() as tmp:
        adapter = args.adapter or zero_adapter(Path(tmp) / "adapter")
        today = run(None, config, envs, adapter)
        earlier = run(args.against, config, envs, adapter)
    report("today", today, roof)
    report(args.against, earlier, roof)
    same = sum(
        [m.content for m in a.messages] == [m.content for m in b.messages]
        for a, b in zip(today[0], earlier[0], strict=True)
    )
    print(f"wall time {args.against} / today: {earlier[1] / today[1]:.2f}x; "
          f"identical episodes {same}/{len(today[0])}")  # fmt: skip


if __name__ == "__main__":
    main()

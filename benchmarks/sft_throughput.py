"""LoRA SFT speed and memory: our loop vs today's loop (and optionally TRL).

All variants train the same rank-8, α-16, all-linear LoRA of the same model on
the same verified expert demonstrations (WebShop by default: long pages, so
micro-batches of 4 reach the 1,024-token cap), for the same epochs,
micro-batch size and LoRA dropout (``SFTConfig``'s default unless ``--dropout``;
figures before the flag existed were measured at 0), from a model name to an
adapter folder on disk (model load, tokenisation, training and saving are all
timed). Each variant runs in its own process, so its peak resident memory is its
own.

Variants:

- ``ours``: ``evoflow.train.train_sft`` as it is (precision ``auto``: bf16
  autocast where the CPU has bf16 units, fp32 elsewhere);
- ``ours-fp32`` / ``ours-ckpt``: ours forced to fp32 / with gradient
  checkpointing (the memory-saving option);
- ``today``: the loop of commit ``baseline.BASELINE`` (before this work), loaded
  from git — padded batches with an attention mask, one vocabulary-wide logits
  tensor for all labelled positions, fp32 on CPU;
- ``trl``: TRL's ``SFTTrainer`` with our precision and no checkpointing.

Throughput counts, for every variant, the tokens our encoder keeps (sequence
tokens × epochs, padding excluded) per second of wall time. Compute is shown as
a share of this machine's roofline (``roofline.py``, measured first): model
FLOPs ≈ 2 × (linear parameters) per token forward, the same again backward
(frozen weights need no weight gradients), plus attention and the LM head at
labelled positions. Goals: ours ≥ 2× today's tokens/s; peak RSS ≤ 4 GB at
micro-batch 4 × 1,024 tokens.

    python benchmarks/sft_throughput.py [--variants today ours ours-ckpt]
        [--env webshop] [--demos 8] [--epochs 1] [--batch-size 4]
        [--max-length 1024] [--threads 1] [--dropout 0.05]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import roofline
import torch

from evoflow.train.sft_config import SFTConfig

MODEL = "smollm2-135m-instruct"
VARIANTS = ("today", "ours", "ours-fp32", "ours-ckpt", "trl")
HERE = Path(__file__).resolve()


def demo_chats(env: str, n: int) -> list[list[dict]]:
    from evoflow.rollout.expert import expert_demos

    return [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in expert_demos(env, n, "bench", seed=0)
    ]


def sft_config(args, **overrides):
    from evoflow.train import SFTConfig

    return SFTConfig(
        lora_r=8,
        lora_alpha=16,
        lora_dropout=args.dropout,
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_length=args.max_length,
        **overrides,
    )


def train(variant: str, args, output: Path) -> dict:
    """Run one variant in this process; return its summary."""
    chats = demo_chats(args.env, args.demos)
    if variant == "today":
        import baseline

        old = baseline.load("src/evoflow/train/sft_trainer.py")
        return old.train_sft(chats, MODEL, output, sft_config(args), progress=False)
    if variant == "trl":
        return train_trl(chats, args, output)
    overrides = {
        "ours": {},
        "ours-fp32": {"precision": "float32"},
        "ours-ckpt": {"gradient_checkpointing": True},
    }[variant]
    from evoflow.train import train_sft

    return train_sft(
        chats, MODEL, output, sft_config(args, **overrides), progress=False
    )


def train_trl(chats, args, output: Path) -> dict:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    from evoflow.policy.models import resolve_model

    path = resolve_model(MODEL)
    dataset = Dataset.from_list(
        [{"messages": [{"role": m["role"], "content": m["content"]} for m in c]}
         for c in chats]
    )  # fmt: skip
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(path),
        args=TRLConfig(
            output_dir=str(output / "run"),
            num_train_epochs=args.epochs,
            per_device_train_batch_size=args.batch_size,
            max_length=args.max_length,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            use_cpu=not torch.cuda.is_available(),
            bf16=torch.cuda.is_available(),
            gradient_checkpointing=False,
        ),  # fmt: skip
        train_dataset=dataset,
        processing_class=AutoTokenizer.from_pretrained(path),
        peft_config=LoraConfig(
            r=8,
            lora_alpha=16,
            lora_dropout=args.dropout,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        ),
    )
    trainer.train()
    trainer.save_model(str(output))
    return {"precision": "float32"}


def worker(variant: str, args) -> None:
    """Child process: train once, print one JSON line with time and memory."""
    torch.set_num_threads(args.threads)
    import resource

    with tempfile.TemporaryDirectory(prefix="evoflow-bench-") as tmp:
        start = time.perf_counter()
        summary = train(variant, args, Path(tmp) / "adapter")
        seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    precision = summary.get("precision", "float32")
    print(json.dumps({"seconds": seconds, "peak_rss_mb": rss, "precision": precision}))


def workload(args) -> dict:
    """Tokens, labelled tokens and FLOPs per epoch, as our encoder sees the chats."""
    from transformers import AutoConfig, AutoTokenizer

    from evoflow.policy.models import resolve_model
    from evoflow.train.sft_data import encode_within

    path = resolve_model(MODEL)
    tokenizer = AutoTokenizer.from_pretrained(path)
    examples = [encode_within(tokenizer, c, args.max_length)
                for c in demo_chats(args.env, args.demos)]  # fmt: skip
    kept = [e for e in examples if e is not None]
    config = AutoConfig.from_pretrained(path)
    flops = sum(train_flops(config, len(e.input_ids), e.trained_tokens) for e in kept)
    return {
        "episodes": len(kept),
        "tokens": sum(len(e.input_ids) for e in kept),
        "labelled": sum(e.trained_tokens for e in kept),
        "flops": flops,
    }


def train_flops(config, length: int, labelled: int) -> float:
    """Forward + input-gradient FLOPs of one sequence (frozen base, small LoRA).

    Multiply-accumulates per token: the linear layers' parameters, attention
    (QK^T and AV over L/2 positions on average under the causal mask: d·L per
    layer) and the LM head at labelled positions; ×2 FLOPs per MAC, ×2 for the
    backward pass.
    """
    d, layers = config.hidden_size, config.num_hidden_layers
    kv = d * config.num_key_value_heads // config.num_attention_heads
    linear = layers * (2 * d * d + 2 * d * kv + 3 * d * config.intermediate_size)
    attention = layers * d * length
    head = d * config.vocab_size * labelled / length
    return 2 * 2 * length * (linear + attention + head)


def run_variant(variant: str, args) -> dict:
    command = [sys.executable, str(HERE), "--worker", variant, *forwarded(args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def forwarded(args) -> list[str]:
    return [f"--env={args.env}", f"--demos={args.demos}", f"--epochs={args.epochs}",
            f"--batch-size={args.batch_size}", f"--max-length={args.max_length}",
            f"--threads={args.threads}", f"--dropout={args.dropout}"]  # fmt: skip


def report(results: dict, work: dict, roof: dict, args) -> None:
    tokens = work["tokens"] * args.epochs
    for name, r in results.items():
        rate = tokens / r["seconds"]
        share = work["flops"] * args.epochs / r["seconds"] / 1e9
        share /= roofline.peak(roof, r["precision"])
        print(f"{name:>10}: {r['seconds']:7.1f} s  {rate:6.1f} tok/s  "
              f"{share:6.1%} of the {r['precision']} roofline  "
              f"peak RSS {r['peak_rss_mb'] / 1024:5.2f} GB")  # fmt: skip
    if "today" in results:
        for name, r in results.items():
            if name != "today":
                ratio = results["today"]["seconds"] / r["seconds"]
                print(f"speed {name} / today: {ratio:.2f}x (goal ≥ 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS,
                        default=["today", "ours", "ours-ckpt"])  # fmt: skip
    parser.add_argument("--env", default="webshop")
    parser.add_argument("--demos", type=int, default=8)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=SFTConfig.lora_dropout)
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args)
    roof = roofline.measure(args.threads)
    print(roofline.describe(roof, args.threads))
    work = workload(args)
    print(f"{MODEL}; {work['episodes']} {args.env} demos, {work['tokens']} tokens "
          f"({work['labelled']} labelled) per epoch; epochs {args.epochs}, "
          f"micro-batch {args.batch_size} x ≤{args.max_length} tokens; "
          f"{args.threads} thread(s)")  # fmt: skip
    results = {}
    for variant in args.variants:
        results[variant] = run_variant(variant, args)
        print(f"  {variant}: {results[variant]['seconds']:.1f} s", flush=True)
    report(results, work, roof, args)


if __name__ == "__main__":
    main()

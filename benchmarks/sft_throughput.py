"""LoRA SFT throughput: ``evoflow.train.train_sft`` vs TRL's ``SFTTrainer``.

Both train the same rank-8, α-16, all-linear LoRA (dropout 0.05) of the same
model on the same verified Maze expert demonstrations, for the same epochs and
micro-batch size, from a model name to an adapter folder on disk (model load,
tokenisation, training and saving are all timed). TRL gets the chats as a
conversational ``messages`` dataset (``datasets.Dataset.from_list``), the
tokenizer as ``processing_class``, the LoRA as ``peft_config``, ``max_length``
equal to ours, ``report_to="none"``, ``save_strategy="no"``, a temporary
``output_dir`` and, without CUDA, ``use_cpu=True`` (else its default
``bf16=True`` is refused); everything else is TRL's default. Two TRL variants:

- ``default``: TRL's defaults as they are — note they include
  ``gradient_checkpointing=True`` and ``bf16=True``; on a CPU without bf16
  instructions torch runs bf16 matmuls through its slow reference gemm, so this
  variant is only run there on request (``--trl default matched``: SmolLM2 takes
  tens of minutes);
- ``matched``: the same but with the precision and checkpointing ours uses
  (fp32 and no checkpointing on CPU, bf16 autocast on CUDA), so only the
  training loop differs.

Throughput is counted the same way for all runs, from our encoding of the chats
(``encode_within`` with the same ``max_length``): all tokens processed
(sequence tokens × epochs, padding excluded) and labelled tokens (assistant
turns × epochs) per second of wall time. Repetitions alternate ours, TRL, TRL …;
medians are printed, with the ratios ours/TRL (goal ≥ 1.0). TRL's own
``train_runtime`` (its training loop alone) is printed too. The default run
(SmolLM2, 8 demos, ours + TRL matched) takes about 5 minutes on 2 CPU cores.

    python benchmarks/sft_throughput.py [--model smollm2-135m-instruct]
        [--demos 8] [--epochs 1] [--batch-size 4] [--max-length 4096]
        [--trl [default] [matched]] [--reps 1] [--threads 1]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import datasets
import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.trainer_callback import PrinterCallback
from trl import SFTConfig as TRLConfig
from trl import SFTTrainer

from evoflow.policy.models import resolve_model
from evoflow.rollout.expert import expert_demos
from evoflow.train import SFTConfig, train_sft
from evoflow.train.sft_data import encode_within

RANK, ALPHA, DROPOUT = 8, 16, 0.05


def demo_chats(n: int) -> list[list[dict]]:
    episodes = expert_demos("maze", n, "bench", seed=0)
    return [
        [{"role": m.role, "content": m.content, "loss": m.loss} for m in e.messages]
        for e in episodes
    ]


def count_tokens(model: str, chats, max_length: int) -> tuple[int, int]:
    """Tokens and labelled tokens per epoch, as our encoder sees the chats."""
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(model))
    examples = [encode_within(tokenizer, chat, max_length) for chat in chats]
    kept = [e for e in examples if e is not None]
    return sum(len(e.input_ids) for e in kept), sum(e.trained_tokens for e in kept)


def run_ours(model: str, chats, args, workdir: Path) -> tuple[float, dict]:
    config = SFTConfig(
        lora_r=RANK,
        lora_alpha=ALPHA,
        lora_dropout=DROPOUT,
        target_modules="all-linear",
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_length=args.max_length,
    )
    t0 = time.perf_counter()
    train_sft(chats, model, workdir / "ours", config, progress=False)
    return time.perf_counter() - t0, {}


def run_trl(model: str, chats, args, workdir: Path, variant: str) -> tuple[float, dict]:
    matched = {"bf16": torch.cuda.is_available(), "gradient_checkpointing": False}
    t0 = time.perf_counter()
    path = resolve_model(model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    base = AutoModelForCausalLM.from_pretrained(path)
    dataset = Dataset.from_list(
        [{"messages": [{"role": m["role"], "content": m["content"]} for m in chat]}
         for chat in chats]
    )  # fmt: skip
    config = TRLConfig(
        output_dir=str(workdir / f"trl-{variant}-run"),
        num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch_size,
        max_length=args.max_length,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),  # bf16 on CPU is refused without it
        **(matched if variant == "matched" else {}),
    )
    lora = LoraConfig(
        r=RANK,
        lora_alpha=ALPHA,
        lora_dropout=DROPOUT,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=base,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
    )
    trainer.remove_callback(PrinterCallback)  # no log lines on stdout
    result = trainer.train()
    trainer.save_model(str(workdir / f"trl-{variant}"))
    seconds = time.perf_counter() - t0
    own_tokens = sum(len(ids) for ids in trainer.train_dataset["input_ids"])
    return seconds, {
        "train_runtime": result.metrics["train_runtime"],
        "own_tokens": own_tokens,
        "bf16": config.bf16,
        "checkpointing": config.gradient_checkpointing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--demos", type=int, default=8, help="Maze expert chats")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--trl", nargs="+", choices=["default", "matched"], default=None,
                        help="TRL variants (default: both on CUDA, matched only on CPU)")  # fmt: skip
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="0: torch's default")
    args = parser.parse_args()
    if args.trl is None:
        args.trl = ["default", "matched"] if torch.cuda.is_available() else ["matched"]
    if args.threads:
        torch.set_num_threads(args.threads)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    datasets.disable_progress_bars()
    chats = demo_chats(args.demos)
    tokens, labelled = count_tokens(args.model, chats, args.max_length)
    print(
        f"torch threads {torch.get_num_threads()}; {args.model}; {len(chats)} Maze "
        f"demos, {tokens} tokens ({labelled} labelled) per epoch; epochs "
        f"{args.epochs}, micro-batch {args.batch_size}, LoRA r={RANK} α={ALPHA} "
        "all-linear"
    )
    workdir = Path(tempfile.mkdtemp(prefix="evoflow-bench-"))
    runs = {"ours": lambda m, c: run_ours(m, c, args, workdir)}
    for variant in args.trl:
        runs[f"trl {variant}"] = lambda m, c, v=variant: run_trl(m, c, args, workdir, v)
    try:
        for run in runs.values():  # warm-up on the tiny model, untimed
            run("tiny-random-llama", chats[:2])
        times: dict[str, list[float]] = defaultdict(list)
        extra: dict[str, dict] = {}
        for _ in range(args.reps):  # interleaved: ours, trl, trl, ours, …
            for name, run in runs.items():
                seconds, extra[name] = run(args.model, chats)
                times[name].append(seconds)
                print(f"  {name}: {seconds:.1f} s", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    total, trained = tokens * args.epochs, labelled * args.epochs
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, seconds in median.items():
        info = extra[name]
        detail = (
            f"  [train loop {info['train_runtime']:.1f} s; bf16={info['bf16']}, "
            f"gradient_checkpointing={info['checkpointing']}; TRL's own tokenisation "
            f"{info['own_tokens']} tokens/epoch, loss on all of them]"
            if info
            else ""
        )
        print(
            f"{name:>12}: {seconds:7.1f} s  {total / seconds:7.1f} tok/s  "
            f"{trained / seconds:6.1f} labelled tok/s (median of {args.reps}){detail}"
        )
    for name in median:
        if name != "ours":
            print(
                f"ratio ours/{name}: {median[name] / median['ours']:.2f}x (goal ≥ 1.0)"
            )


if __name__ == "__main__":
    main()

"""Server step on 7B-sized adapters: ``aggregate_adapters`` vs a naive stack-and-mean.

Writes ``--clients`` real PEFT adapter folders (``adapter_config.json`` +
``adapter_model.safetensors``) of random fp32 tensors shaped like a rank-8 LoRA on
every linear layer of Qwen2.5-7B (28 blocks; q, k, v, o, gate, up, down; hidden
3584, intermediate 18944, 28 heads, 4 KV heads, head dim 128: 20,185,088
parameters, 77 MiB per adapter). Then, alternating A B A B, it times

- ours: ``evoflow.fed.aggregate_adapters`` (load, check, float64 mean, atomic
  save, comm.json), and
- baseline: the obvious loop (``safetensors`` load, ``torch.stack(...).mean(0)``
  per tensor, ``save_file``),

checks both give the same tensors, and prints the medians, the ratio and the
communication figures from comm.json. In-process repetitions are warm (pages and
kernels already touched); a Snakemake rule runs the server step once in a fresh
process, so ``--cold-reps`` more A B pairs each run in a new interpreter (import
time excluded). ``--layers`` shrinks the model for a quick check; ``--threads``
sets torch's intra-op threads (two OpenMP threads on a 2-core machine shared
with other jobs wait on each other at every small op).

    python benchmarks/aggregate_speed.py [--clients 5] [--rank 8] [--layers 28]
        [--reps 5] [--cold-reps 2] [--threads N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from evoflow.fed import aggregate_adapters
from evoflow.fed.comm import DecoderShape, lora_parameters

QWEN_7B = DecoderShape(
    hidden=3584, intermediate=18944, layers=28, heads=28, kv_heads=4, head_dim=128
)
MODULES = [
    ("self_attn", "q_proj"),
    ("self_attn", "k_proj"),
    ("self_attn", "v_proj"),
    ("self_attn", "o_proj"),
    ("mlp", "gate_proj"),
    ("mlp", "up_proj"),
    ("mlp", "down_proj"),
]  # the order of DecoderShape.linear_shapes()


def adapter_tensors(
    shape: DecoderShape, rank: int, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """PEFT-named random LoRA A (r × in) and B (out × r) matrices of every block."""
    tensors = {}
    for layer in range(shape.layers):
        for (block, name), (fan_in, fan_out) in zip(
            MODULES, shape.linear_shapes(), strict=True
        ):
            prefix = f"base_model.model.model.layers.{layer}.{block}.{name}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(
                rank, fan_in, generator=generator
            )
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(
                fan_out, rank, generator=generator
            )
    return tensors


def write_clients(workdir: Path, clients: int, shape: DecoderShape, rank: int):
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": rank,
        "lora_alpha": 2 * rank,
        "lora_dropout": 0.05,
        "target_modules": sorted(name for _, name in MODULES),
        "base_model_name_or_path": "Qwen/Qwen2.5-7B-Instruct",
    }
    generator = torch.Generator().manual_seed(0)
    folders = []
    for k in range(clients):
        folder = workdir / f"client-{k}"
        folder.mkdir(parents=True)
        (folder / "adapter_config.json").write_text(json.dumps(config, indent=2))
        save_file(
            adapter_tensors(shape, rank, generator),
            folder / "adapter_model.safetensors",
        )
        folders.append(folder)
    return folders


def naive_mean(folders: list[Path], output: Path) -> None:
    """The baseline: load every client, stack and average tensor by tensor, save."""
    states = [load_file(f / "adapter_model.safetensors") for f in folders]
    merged = {
        name: torch.stack([s[name] for s in states]).mean(0) for name in states[0]
    }
    output.mkdir(parents=True, exist_ok=True)
    shutil.copy(folders[0] / "adapter_config.json", output / "adapter_config.json")
    save_file(merged, output / "adapter_model.safetensors")


def run_once(which: str, folders: list[Path], workdir: Path) -> float:
    """Seconds of one server step: ours (``aggregate_adapters``) or the naive one."""
    t0 = time.perf_counter()
    if which == "ours":
        aggregate_adapters(folders, workdir / "global", workdir / "comm.json")
    else:
        naive_mean(folders, workdir / "naive")
    return time.perf_counter() - t0


def run_cold(which: str, workdir: Path, threads: int | None) -> float:
    """``run_once`` in a fresh interpreter (imports not timed)."""
    command = [sys.executable, __file__, "--only", which, "--workdir", str(workdir)]
    if threads:
        command += ["--threads", str(threads)]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--layers", type=int, default=QWEN_7B.layers)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cold-reps", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--only", choices=["ours", "naive"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.only:  # child of run_cold: clients already written in --workdir
        folders = sorted(args.workdir.glob("client-*"))
        print(f"{run_once(args.only, folders, args.workdir):.6f}")
        return
    shape = DecoderShape(**{**QWEN_7B.__dict__, "layers": args.layers})
    params = lora_parameters(shape, args.rank)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="evoflow-bench-"))
    try:
        t0 = time.perf_counter()
        folders = write_clients(workdir, args.clients, shape, args.rank)
        print(
            f"wrote {args.clients} adapters of {params:,} params "
            f"({params * 4 / 2**20:.1f} MiB fp32 each) in {time.perf_counter() - t0:.1f} s"
        )
        cold: dict[str, list[float]] = {"ours": [], "naive": []}
        for _ in range(args.cold_reps):  # interleaved: A B A B …
            for which in cold:
                cold[which].append(run_cold(which, workdir, args.threads))
        times: dict[str, list[float]] = {"ours": [], "naive": []}
        for _ in range(args.reps):
            for which in times:
                times[which].append(run_once(which, folders, workdir))

        ours = load_file(workdir / "global" / "adapter_model.safetensors")
        naive = load_file(workdir / "naive" / "adapter_model.safetensors")
        worst = max((ours[k] - naive[k]).abs().max().item() for k in ours)
        assert ours.keys() == naive.keys() and worst < 1e-5, f"results differ ({worst})"
        print(f"threads: {torch.get_num_threads()}; max |ours - naive| = {worst:.2e}")
        for label, runs in (("warm, in-process", times), ("cold, fresh process", cold)):
            if not runs["ours"]:
                continue
            t_ours, t_naive = (statistics.median(runs[k]) for k in ("ours", "naive"))
            n = len(runs["ours"])
            print(f"{label}: aggregate_adapters (float64 mean, atomic save) "
                  f"{t_ours:.3f} s, naive torch.stack(...).mean(0) {t_naive:.3f} s "
                  f"(medians of {n}); ratio naive/ours {t_naive / t_ours:.2f}x; "
                  f"goal ours < 2 s {'met' if t_ours < 2 else 'MISSED'}")  # fmt: skip
        record = json.loads((workdir / "comm.json").read_text())
        up = record["per_client"]["up_mib"]
        print(
            f"comm.json: {record['parameters_per_adapter']:,} params per adapter, "
            f"{record['clients']} clients; per client up = down = "
            f"{up['fp32']:.2f} MiB fp32 / {up['bf16']:.2f} MiB bf16; round "
            f"{record['round_mib']['fp32']:.2f} MiB fp32 / "
            f"{record['round_mib']['bf16']:.2f} MiB bf16"
        )
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

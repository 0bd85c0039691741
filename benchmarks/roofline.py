"""This machine's compute roofline: dense matmul GFLOPS in fp32 and bf16.

Every compute benchmark in this folder prints its figure as a share of these
numbers, measured in the same run, so a result reads the same on a laptop, a
2-core CI machine or a workstation. The shape is one SmolLM2 MLP projection at
512 tokens (512 × 576 @ 576 × 1536), the matmul that dominates our training and
prefill; the best of several timed repetitions is kept. bf16 is only fast on
CPUs with AVX512-BF16 or AMX (``evoflow.precision``); elsewhere torch falls back
to a reference kernel about a hundred times slower, which the table shows.

    python benchmarks/roofline.py [--threads 1 2] [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import time

import torch

from evoflow.precision import cpu_has_fast_bf16

SHAPE = (512, 576, 1536)


def matmul_gflops(
    dtype: torch.dtype, threads: int, shape=SHAPE, seconds: float = 1.0
) -> float:
    """Best GFLOPS of ``(m × k) @ (k × n)`` over about ``seconds`` of repetitions."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        m, k, n = shape
        a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
        a @ b  # warm-up
        best, spent = float("inf"), 0.0
        while spent < seconds:
            start = time.perf_counter()
            a @ b
            took = time.perf_counter() - start
            best, spent = min(best, took), spent + took
            if took > seconds:  # a slow kernel: one timing is enough
                break
        return 2 * m * k * n / best / 1e9
    finally:
        torch.set_num_threads(previous)


def measure(threads: int = 1, seconds: float = 1.0) -> dict[str, float]:
    """fp32 and bf16 GFLOPS with ``threads`` threads, and which one is fast."""
    fp32 = matmul_gflops(torch.float32, threads, seconds=seconds)
    bf16 = matmul_gflops(torch.bfloat16, threads, seconds=seconds)
    return {"fp32": fp32, "bf16": bf16, "fast_bf16": cpu_has_fast_bf16()}


def peak(roof: dict[str, float], dtype: str) -> float:
    """The roofline GFLOPS of the compute dtype a run used (``float32``…)."""
    return roof["bf16"] if dtype == "bfloat16" else roof["fp32"]


def describe(roof: dict[str, float], threads: int) -> str:
    return (
        f"roofline ({threads} thread{'s' if threads > 1 else ''}, "
        f"{SHAPE[0]}x{SHAPE[1]}x{SHAPE[2]} matmul): fp32 {roof['fp32']:.1f} GFLOPS, "
        f"bf16 {roof['bf16']:.1f} GFLOPS (hardware bf16: "
        f"{'yes' if roof['fast_bf16'] else 'no'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    for threads in args.threads:
        roof = measure(threads, args.seconds)
        print(describe(roof, threads))
        print(f"  bf16 / fp32 = {roof['bf16'] / roof['fp32']:.2f}")


if __name__ == "__main__":
    main()

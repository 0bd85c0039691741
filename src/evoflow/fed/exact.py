"""Exact LoRA aggregation: the clients' weighted average of ΔW = B·A,
re-factorised to the adapter's rank by truncated SVD.

Averaging A and B separately (Fed-SE's server step) gives mean(B)·mean(A),
which is not mean(B·A): the cross terms B_j·A_k of different clients enter
the product. The exact average of K rank-r updates has rank up to K·r; we keep
its best rank-r approximation (Eckart–Young), so the global adapter stays a
PEFT adapter of the same rank and every reader of it works unchanged. The
other published fix, folding the residual into the base weights (FedEx-LoRA),
would make the base model itself change every round and ship with each
adapter; our artifacts are adapter folders over one frozen base, so we keep
the adapter and report what truncation loses.

The SVD never forms an out×in matrix: with B_cat = [B_1 … B_K] and
A_cat = [A_1; …; A_K], Σ w_k B_k A_k = B_cat·diag(w)·A_cat; two thin QRs reduce
it to a (K·r)×(K·r) core whose SVD gives the factors.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from evoflow.fed.strategies import State, weighted_mean

A_KEY, B_KEY = "lora_A", "lora_B"


def pairs(state: State) -> dict[str, tuple[str, str]]:
    """Module prefix -> (its lora_A name, its lora_B name)."""
    found = {}
    for name in state:
        if f".{A_KEY}." in name:
            prefix = name.split(f".{A_KEY}.")[0]
            partner = name.replace(f".{A_KEY}.", f".{B_KEY}.")
            if partner not in state:
                raise ValueError(f"{name} has no {B_KEY} partner ({partner})")
            found[prefix] = (name, partner)
    return found


def _core(bs: list[torch.Tensor], as_: list[torch.Tensor], weights: torch.Tensor):
    """Thin factors of Σ w_k B_k A_k: (Q_b, core, Q_a) with the sum = Q_b·core·Q_aᵀ."""
    b_cat = torch.cat(bs, dim=1)  # out × Kr
    a_cat = torch.cat(as_, dim=0)  # Kr × in
    scale = weights.repeat_interleave(as_[0].shape[0])
    q_b, r_b = torch.linalg.qr(b_cat)
    q_a, r_a = torch.linalg.qr(a_cat.T)
    return q_b, r_b @ torch.diag(scale) @ r_a.T, q_a


def exact_mean(states: Sequence[State], weights: Sequence[float] | None = None,
               rank: int | None = None) -> tuple[State, dict]:  # fmt: skip
    """The rank-``rank`` factors of the weighted mean of B·A for every LoRA
    module (other tensors: their weighted mean), and the relative Frobenius
    errors of this result and of the naive mean(B)·mean(A), over all modules:
    ``{"exact": …, "naive": …}``."""
    weights = [1.0] * len(states) if weights is None else list(weights)
    naive = weighted_mean(states, weights)
    total = float(sum(weights))
    w = torch.tensor([x / total for x in weights], dtype=torch.float64)
    merged, lost, naive_err, mass = dict(naive), 0.0, 0.0, 0.0
    for a_name, b_name in pairs(states[0]).values():
        r = rank or states[0][a_name].shape[0]
        bs = [s[b_name].to(torch.float64) for s in states]
        as_ = [s[a_name].to(torch.float64) for s in states]
        q_b, core, q_a = _core(bs, as_, w)
        u, sigma, vh = torch.linalg.svd(core)
        b_scale, a_scale = _split(sigma[:r])
        merged[b_name] = ((q_b @ u[:, :r]) * b_scale).to(states[0][b_name].dtype)
        merged[a_name] = (a_scale[:, None] * (vh[:r] @ q_a.T)).to(
            states[0][a_name].dtype
        )
        mass += float((sigma**2).sum())
        lost += float((sigma[r:] ** 2).sum())
        naive_err += _naive_error(q_b, core, q_a, naive[b_name], naive[a_name])
    scale = mass**0.5 or 1.0
    return merged, {"exact": lost**0.5 / scale, "naive": naive_err**0.5 / scale}


def _split(sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """How each kept singular value is shared between B and A: √σ each; for
    σ ≈ 0, B's column is 0 and A's row keeps unit norm — a zero row in both
    would get no gradient ever again, while this one is where a fresh LoRA
    starts (A set, B zero)."""
    alive = sigma > 1e-12 * max(float(sigma.max()), 1e-30)
    root = sigma.clamp(min=0).sqrt()
    return torch.where(alive, root, 0.0), torch.where(alive, root, 1.0)


def _naive_error(q_b, core, q_a, b_mean, a_mean) -> float:
    """‖Σ w_k B_k A_k − mean(B)·mean(A)‖_F², without forming either matrix:
    the naive product's factors are projected on the exact sum's bases
    (they lie in them: mean(B) is in span(B_cat), mean(A)ᵀ in span(A_catᵀ))."""
    b_mean, a_mean = b_mean.to(torch.float64), a_mean.to(torch.float64)
    naive_core = (q_b.T @ b_mean) @ (a_mean @ q_a)
    return float(((core - naive_core) ** 2).sum())

"""Next-token cross-entropy without materialising the vocabulary-wide logits.

A language-model head maps each hidden state to one logit per vocabulary entry
(49,152 for SmolLM2). Computed over a whole batch in one go, those logits and
their softmax gradient are the largest tensors of a training step. Here they
exist only ``chunk`` rows at a time: the forward pass computes, per chunk, the
loss *and* its gradient with respect to the hidden states, keeping the latter
(``rows × hidden`` — a few hundred times smaller than the logits); the backward
pass just scales it. The head's weight is frozen in LoRA training (SmolLM2 ties
it to the input embeddings), so its gradient is never needed; a trainable head
is refused rather than silently left untrained.
"""

from __future__ import annotations

import torch

DEFAULT_CHUNK = 1024


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, chunk):
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        grad = torch.empty_like(hidden) if ctx.needs_input_grad[0] else None
        for start in range(0, hidden.shape[0], chunk):
            rows = slice(start, start + chunk)
            logits = (hidden[rows] @ weight.t()).float()
            picked = targets[rows].unsqueeze(1)
            total += (logits.logsumexp(-1) - logits.gather(1, picked).squeeze(1)).sum()
            if grad is not None:
                probs = torch.softmax(logits, dim=-1)
                probs[torch.arange(probs.shape[0]), targets[rows]] -= 1.0
                grad[rows] = (probs.to(weight.dtype) @ weight).to(hidden.dtype)
        ctx.save_for_backward(grad if grad is not None else hidden.new_empty(0))
        return total

    @staticmethod
    def backward(ctx, upstream):
        (grad,) = ctx.saved_tensors
        return grad * upstream.to(grad.dtype), None, None, None


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    chunk: int = DEFAULT_CHUNK,
) -> torch.Tensor:
    """Summed cross-entropy of ``softmax(hidden @ weight.T)`` against ``targets``.

    Parameters
    ----------
    hidden
        ``(rows, d)`` hidden states at the positions that are scored.
    weight
        ``(vocab, d)`` frozen output-embedding matrix.
    targets
        ``(rows,)`` token ids to predict.
    chunk
        rows whose logits exist at once.

    Returns
    -------
    torch.Tensor
        a float32 scalar; its gradient flows to ``hidden`` only.
    """
    if weight.requires_grad:
        raise ValueError(
            "linear_cross_entropy: the output head is trainable, but this loss "
            "only returns gradients for the hidden states; freeze the head"
        )
    if chunk < 1:
        raise ValueError(f"linear_cross_entropy: chunk must be >= 1, got {chunk}")
    return _LinearCrossEntropy.apply(hidden, weight, targets, chunk)

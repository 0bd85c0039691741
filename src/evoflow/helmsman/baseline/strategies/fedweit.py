"""FedWeIT (Yoon et al., 2021): federated continual learning by weighted
inter-client transfer. Client c's model for its task t is

    θ = B ⊙ m_t + A_t + Σ_k α_t,k · A_k

with B the base shared by all clients (the only part the server averages),
m_t a mask over each layer's output units, A_t the task's own adaptive
weights (both kept sparse by an L1 term λ1), and A_k the knowledge base: the
other clients' adaptive weights of tasks already finished, which the server
collects and broadcasts, and the client weighs with the attention α_t.
While training task t the client's drift of B is penalised where its past
tasks' masks use it, λ2 Σ_{i<t} ‖(B − B_{t−1}) ⊙ m_i‖², and every past task
keeps its mask, adaptive weights and transfer, so the client evaluates each
task with that task's model: the task identity is known at test time, as in
the paper's task-incremental setting.

Ours differs in two documented ways: past tasks' A_i are kept fixed (the
paper may also update them retroactively), and the uplink is not pruned to
its non-zeros (we do not measure bytes here).
"""

from __future__ import annotations

import numpy as np
import task
from flwr.app import ArrayRecord, ConfigRecord, MetricRecord
from flwr.serverapp.strategy import FedAvg, Strategy

NAME = "fedweit"
LAYERS = 4  # W1, b1, W2, b2: every array is decomposed


class FedWeIT(FedAvg):
    """Averages the clients' masked bases B ⊙ m and keeps the knowledge
    base: each client's latest adaptive weights per task, broadcast once the
    task is over."""

    def __init__(self, tasks: int, rounds: int, **sampling):
        super().__init__(**sampling)
        self._tasks, self._rounds, self._kb = tasks, rounds, {}

    def configure_train(self, server_round, arrays, config, grid):
        self._base = arrays.to_numpy_ndarrays()
        now = task.current_task(server_round, self._rounds, self._tasks)
        done = sorted(key for key in self._kb if key[1] < now)
        config["kb_owners"] = [owner for owner, _ in done]
        sent = self._base + [a for key in done for a in self._kb[key]]
        return super().configure_train(server_round, ArrayRecord(sent), config, grid)

    def aggregate_train(self, server_round, replies):
        valid, _ = self._check_and_log_replies(replies, is_train=True)
        trained = [m for m in valid if float(m.content["metrics"]["num-examples"]) > 0]
        if not trained:
            return (ArrayRecord(self._base), MetricRecord({"train_loss": 0.0})) if valid \
                else (None, None)  # fmt: skip
        counts = np.array(
            [float(m.content["metrics"]["num-examples"]) for m in trained]
        )
        shares = counts / counts.sum()
        for message in trained:
            metrics = message.content["metrics"]
            key = (int(metrics["partition"]), int(metrics["task"]))
            self._kb[key] = message.content["arrays"].to_numpy_ndarrays()[LAYERS:]
        uploads = [m.content["arrays"].to_numpy_ndarrays()[:LAYERS] for m in trained]
        base = [sum(p * u[i] for p, u in zip(shares, uploads, strict=True)).astype(np.float32)
                for i in range(LAYERS)]  # fmt: skip
        losses = [float(m.content["metrics"]["train_loss"]) for m in trained]
        return ArrayRecord(base), MetricRecord({"train_loss": float(shares @ losses)})


def build_strategy(config: dict) -> Strategy:
    tasks = len(task.meta().get("tasks") or [[]])
    return FedWeIT(tasks, int(config["rounds"]), **task.sampling(config))


def compose(base, mask, adaptive, transfer) -> list[np.ndarray]:
    """θ = B ⊙ m + A + (Σ α A_k, already summed)."""
    return [
        b * m + a + k for b, m, a, k in zip(base, mask, adaptive, transfer, strict=True)
    ]


def weighted(alpha: np.ndarray, knowledge: list[list[np.ndarray]], base) -> list:
    """Σ_k α_k A_k per layer (zeros without a knowledge base)."""
    total = [np.zeros_like(b) for b in base]
    for weight, entry in zip(alpha, knowledge, strict=True):
        for layer, part in zip(total, entry, strict=True):
            layer += weight * part
    return total


def step_gradients(params: dict, knowledge, past_masks, anchor, x, y,
                   l1: float, retro: float) -> tuple[float, dict]:  # fmt: skip
    """Loss and the gradients of B, m, A and α by the chain rule through θ,
    with the L1 terms on m and A and the drift penalty on B."""
    base, mask, adaptive, alpha = (
        params[k] for k in ("base", "mask", "adaptive", "alpha")
    )
    theta = compose(base, mask, adaptive, weighted(alpha, knowledge, base))
    loss, grads = task.gradients(theta, x, y)
    d_base = [g * m for g, m in zip(grads, mask, strict=True)]
    for old in past_masks:
        for d, b, b0, m in zip(d_base, base, anchor, old, strict=True):
            d += 2 * retro * (b - b0) * m * m
    d_mask = [(g * b).reshape(-1, b.shape[-1]).sum(0) + l1 * np.sign(m)
              for g, b, m in zip(grads, base, mask, strict=True)]  # fmt: skip
    d_adaptive = [g + l1 * np.sign(a) for g, a in zip(grads, adaptive, strict=True)]
    d_alpha = np.array([sum(float((g * p).sum()) for g, p in zip(grads, entry, strict=True))
                        for entry in knowledge], dtype=np.float32)  # fmt: skip
    return loss, {
        "base": d_base,
        "mask": d_mask,
        "adaptive": d_adaptive,
        "alpha": d_alpha,
    }


def client_train(weights, x, y, config, server_round, partition, state, sent):
    base, rest = weights[:LAYERS], weights[LAYERS:]
    owners = list(sent.get("kb_owners", []))
    knowledge = [rest[LAYERS * k: LAYERS * (k + 1)] for k, owner in enumerate(owners)
                 if owner != partition]  # fmt: skip
    current = task.current_task(server_round, int(config["rounds"]), _tasks())
    params, anchor = _begin(state, base, current, len(knowledge))
    past = [state.array_records[f"weit_task_{i}"].to_numpy_ndarrays()[:LAYERS]
            for i in range(current) if f"weit_task_{i}" in state.array_records]  # fmt: skip
    steps = task.local_steps(
        len(y), float(config["local_epochs"]), int(config["batch"])
    )
    rng = np.random.default_rng(
        int(config["seed"]) * 100_000 + server_round * 100 + partition
    )
    lr, batch, losses = float(config["lr"]), int(config["batch"]), []
    for _ in range(steps if len(y) else 0):
        pick = rng.choice(len(y), size=min(batch, len(y)), replace=False)
        loss, grads = step_gradients(params, knowledge, past, anchor, x[pick], y[pick],
                                     float(config.get("weit_l1", 1e-4)), float(config.get("weit_retro", 1.0)))  # fmt: skip
        for name in ("base", "mask", "adaptive"):
            for p, g in zip(params[name], grads[name], strict=True):
                p -= lr * g
        params["alpha"] -= lr * grads["alpha"]
        losses.append(loss)
    transfer = weighted(params["alpha"], knowledge, base)
    state["weit"] = ArrayRecord(params["mask"] + params["adaptive"] + transfer)
    state["weit_alpha"] = ArrayRecord([params["alpha"]])
    masked = [b * m for b, m in zip(params["base"], params["mask"], strict=True)]
    return masked + params["adaptive"], {
        "train_loss": float(np.mean(losses)) if losses else 0.0,
        "num-examples": len(y), "partition": partition, "task": current,
    }  # fmt: skip


def _tasks() -> int:
    return len(task.meta().get("tasks") or [[]])


def _begin(state, base, current: int, kb_size: int) -> tuple[dict, list]:
    """This task's trainable parts: kept from the last round, or, as a new
    task begins, the finished task frozen and a fresh mask (ones), adaptive
    weights (zeros) and attention (zeros) started; and the B the drift
    penalty anchors to (the base as the task began)."""
    seen = state.config_records.get("weit_task")
    if seen is not None and int(seen["task"]) != current:
        state[f"weit_task_{int(seen['task'])}"] = state["weit"]
    if seen is None or int(seen["task"]) != current:
        state["weit_task"] = ConfigRecord({"task": current})
        state["weit_anchor"] = ArrayRecord([b.copy() for b in base])
        mask = [np.ones(b.shape[-1], np.float32) for b in base]
        adaptive = [np.zeros_like(b) for b in base]
        alpha = np.zeros(kb_size, np.float32)
    else:
        own = state.array_records["weit"].to_numpy_ndarrays()
        mask, adaptive = own[:LAYERS], own[LAYERS : 2 * LAYERS]
        alpha = state.array_records["weit_alpha"].to_numpy_ndarrays()[0]
        if len(alpha) != kb_size:  # the knowledge base changed under us: restart α
            alpha = np.zeros(kb_size, np.float32)
    params = {"base": [b.copy() for b in base], "mask": mask, "adaptive": adaptive,
              "alpha": alpha.astype(np.float32)}  # fmt: skip
    return params, state.array_records["weit_anchor"].to_numpy_ndarrays()


def task_model(weights, state, j: int):
    """Client's model for task ``j``: a finished task's frozen parts, else
    the current task's, on the global base (the base alone before training)."""
    base = weights[:LAYERS]
    key = f"weit_task_{j}" if f"weit_task_{j}" in state.array_records else "weit"
    if key not in state.array_records:
        return base
    own = state.array_records[key].to_numpy_ndarrays()
    return compose(base, own[:LAYERS], own[LAYERS : 2 * LAYERS], own[2 * LAYERS :])


def client_model(weights, state):
    seen = state.config_records.get("weit_task")
    return task_model(weights, state, int(seen["task"]) if seen else 0)

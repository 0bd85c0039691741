"""Data and model of the baseline codebase: a one-hidden-layer MLP in numpy,
trained with minibatch SGD on the task's ``data.npz``.

Runs inside the sandbox as a top-level module (``import task``).
"""

from __future__ import annotations

import json

import numpy as np

DATA = "data.npz"


def load_client(partition: int) -> dict[str, np.ndarray]:
    """One client's arrays: x_train, y_train, x_test (its local test rows;
    their labels stay with the host), and labeled and task_ids where the task
    has them."""
    names = ("x_train", "y_train", "x_test", "labeled", "task_ids")
    with np.load(DATA) as data:
        return {
            n: data[f"{n}_{partition}"]
            for n in names
            if f"{n}_{partition}" in data.files
        }


def load_tests() -> tuple[np.ndarray, np.ndarray | None]:
    """The global test rows and, for a continual task, each row's task."""
    with np.load(DATA) as data:
        tasks = data["task_test"] if "task_test" in data.files else None
        return data["x_test"], tasks


def current_task(server_round: int, rounds: int, tasks: int) -> int:
    """Which of ``tasks`` sequential tasks round ``server_round`` (1-based)
    trains on: the rounds are shared out evenly, in order."""
    return min(tasks - 1, (max(server_round, 1) - 1) * tasks // max(rounds, 1))


def training_data(partition: int, server_round: int, config: dict, state) -> tuple:
    """What a client trains on this round: its labelled samples (an active-
    learning task labels a random batch more each round, up to its budget),
    of the current task only (a continual task)."""
    arrays = load_client(partition)
    x, y = arrays["x_train"].astype(np.float32), arrays["y_train"].astype(np.int64)
    keep = np.ones(len(y), dtype=bool)
    if "labeled" in arrays:
        keep = _labelled(
            arrays["labeled"].astype(bool), partition, server_round, config, state
        )
    if "task_ids" in arrays:
        tasks = len(meta()["tasks"])
        keep &= arrays["task_ids"] == current_task(
            server_round, int(config["rounds"]), tasks
        )
    return x[keep], y[keep]


def _labelled(
    initial: np.ndarray, partition: int, server_round: int, config: dict, state
):
    """The client's labelled mask after this round's acquisition (kept in
    its state): budget minus what it holds, spread over the rounds left."""
    from flwr.app import ArrayRecord

    mask = state.array_records["labeled"].to_numpy_ndarrays()[0] if "labeled" in \
        state.array_records else initial.copy()  # fmt: skip
    budget = int(meta()["label_budget"] * len(mask))
    rounds_left = max(1, int(config["rounds"]) - server_round + 1)
    want = min(budget - int(mask.sum()), -(-(budget - int(mask.sum())) // rounds_left))
    if want > 0:
        rng = np.random.default_rng(
            int(config["seed"]) * 7919 + server_round * 101 + partition
        )
        mask[rng.choice(np.flatnonzero(~mask), size=want, replace=False)] = True
    state["labeled"] = ArrayRecord([mask])
    return mask


def meta() -> dict:
    """The task's settings stored with its data (classes, widths, budgets...)."""
    with np.load(DATA) as data:
        return json.loads(str(data["meta"]))


def num_classes() -> int:
    return int(meta()["num_classes"])


def init_model(inputs: int, classes: int, hidden: int, seed: int) -> list[np.ndarray]:
    """He-initialised weights [W1, b1, W2, b2]."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, np.sqrt(2 / inputs), (inputs, hidden)).astype(np.float32)
    w2 = rng.normal(0, np.sqrt(2 / hidden), (hidden, classes)).astype(np.float32)
    return [w1, np.zeros(hidden, np.float32), w2, np.zeros(classes, np.float32)]


def logits_of(
    weights: list[np.ndarray], x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations and class logits."""
    w1, b1, w2, b2 = weights
    hidden = np.maximum(x @ w1 + b1, 0)
    return hidden, hidden @ w2 + b2


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    scaled = logits / temperature
    scaled = scaled - scaled.max(axis=1, keepdims=True)
    exp = np.exp(scaled)
    return exp / exp.sum(axis=1, keepdims=True)


def forward(weights: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations and class probabilities."""
    hidden, logits = logits_of(weights, x)
    return hidden, softmax(logits)


def gradients(weights, x, y, teacher=None, distill: float = 0.0,
              temperature: float = 2.0) -> tuple[float, list[np.ndarray]]:  # fmt: skip
    """Mean cross-entropy and its gradient; with a ``teacher`` model, plus
    ``distill`` × T² × KL(teacher ‖ model) at temperature T (LwF's term)."""
    w2 = weights[2]
    hidden, logits = logits_of(weights, x)
    probs, n = softmax(logits), len(y)
    loss = float(-np.log(probs[np.arange(n), y] + 1e-12).mean())
    d_logits = probs.copy()
    d_logits[np.arange(n), y] -= 1
    if teacher is not None and distill > 0:
        target = softmax(logits_of(teacher, x)[1], temperature)
        mine = softmax(logits, temperature)
        kl = (target * (np.log(target + 1e-12) - np.log(mine + 1e-12))).sum(1).mean()
        loss += float(distill * temperature**2 * kl)
        d_logits += distill * temperature * (mine - target)
    d_logits /= n
    d_hidden = (d_logits @ w2.T) * (hidden > 0)
    return loss, [x.T @ d_hidden, d_hidden.sum(0), hidden.T @ d_logits, d_logits.sum(0)]


def local_steps(samples: int, epochs: float, batch: int) -> int:
    """SGD steps of ``epochs`` passes over ``samples`` (at least one)."""
    return max(1, round(epochs * samples / batch))


def train(weights, x, y, steps: int, lr: float, batch: int, seed: int,
          proximal_mu: float = 0.0, teacher=None,
          distill: float = 0.0) -> tuple[list[np.ndarray], float]:  # fmt: skip
    """``steps`` minibatch SGD steps; with ``proximal_mu`` > 0 each step adds
    FedProx's pull towards the weights it started from; with a ``teacher``,
    LwF's distillation term (``gradients``)."""
    if len(y) == 0:
        return [w.copy() for w in weights], 0.0
    start = [w.copy() for w in weights]
    weights = [w.copy() for w in weights]
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        pick = rng.choice(len(y), size=min(batch, len(y)), replace=False)
        loss, grads = gradients(weights, x[pick], y[pick], teacher, distill)
        for w, g, w0 in zip(weights, grads, start, strict=True):
            w -= lr * (g + proximal_mu * (w - w0))
        losses.append(loss)
    return weights, float(np.mean(losses))


def local_sgd(weights, x, y, config: dict, server_round: int, partition: int,
              mu: float = 0.0, teacher=None) -> tuple[list[np.ndarray], float, int]:  # fmt: skip
    """A client's local work: SGD for ``local_epochs`` passes over its data,
    seeded by run, round and client; (weights, mean loss, steps)."""
    steps = local_steps(len(y), float(config["local_epochs"]), int(config["batch"]))
    seed = int(config["seed"]) * 100_000 + server_round * 100 + partition
    trained, loss = train(weights, x, y, steps, float(config["lr"]), int(config["batch"]),
                          seed, proximal_mu=mu, teacher=teacher,
                          distill=float(config.get("distill", 0.0)))  # fmt: skip
    return trained, loss, steps


def sampling(config: dict) -> dict:
    """The Flower strategy settings every baseline shares: ``fraction`` of the
    clients train each round, every client evaluates on its local test set."""
    return {"fraction_train": float(config.get("fraction", 1.0)), "fraction_evaluate": 1.0,
            "min_train_nodes": 1, "min_evaluate_nodes": 1, "min_available_nodes": 1}  # fmt: skip


def narrow(weights: list[np.ndarray], hidden: int) -> list[np.ndarray]:
    """The first ``hidden`` units of the hidden layer (HeteroFL's sub-model)."""
    w1, b1, w2, b2 = weights
    return [w1[:, :hidden].copy(), b1[:hidden].copy(), w2[:hidden].copy(), b2.copy()]


def predict(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The class the model gives each row (what the host scores)."""
    return logits_of(weights, x.astype(np.float32))[1].argmax(1).astype(np.int64)

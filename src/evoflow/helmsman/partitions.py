"""Offline federated data for AgentFL-Bench: small stand-ins for the paper's sets.

Base data: scikit-learn's digits (8x8 scaled to [0, 1], flattened) or a numpy
synthetic (Q5/Q6), split 80/20 by ``train_test_split(stratify=y,
random_state=seed)``. Each class's test rows go to the clients in proportion to
their training counts of it (Q5/Q6: users keep their own) and are seen through
the client's view (noise, domain, style); the global test set is their union.
``labeled`` (Q14/Q15) marks the labels known at the start; ``task_ids`` (Q16)
gives each training row's task and ``task_test`` each global test row's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace as Params
from typing import TYPE_CHECKING, Any

import numpy as np

from evoflow.helmsman.datafile import ClientData, FederatedData

if TYPE_CHECKING:  # the task's type only: bench reads this module's PARTITIONS
    from evoflow.helmsman.bench import BenchTask

Parts = list[np.ndarray]
Rng = np.random.Generator
Builder = Callable[[dict, int, int], "FederatedData"]


def _split(x, y, seed: int, source: str, shape, groups=None) -> Params:
    """Stratified, seeded 80/20 split; ``groups`` (users) travel with the rows."""
    from sklearn.model_selection import train_test_split  # slow import: only to build

    rows = [x, y] if groups is None else [x, y, groups]
    out = train_test_split(*rows, test_size=0.2, stratify=y, random_state=seed)
    names = ("x_tr", "x_te", "y_tr", "y_te", "g_tr", "g_te")
    base = Params(**dict(zip(names, out, strict=False)), n_cls=int(y.max()) + 1)
    base.meta = {"source": source, "sample_shape": list(shape)}
    return base


def _params(given: dict, names: str) -> Params:
    """``given`` must hold exactly the space-separated ``names``."""
    if sorted(given) != sorted(names.split()):
        raise ValueError(f"parameters {sorted(given)}; expected: {names}")
    return Params(**given)


def _apportion(n: int, weights) -> np.ndarray:
    """Integer counts summing to ``n``, proportional to ``weights``."""
    raw = n * np.asarray(weights, dtype=float) / np.sum(weights)
    counts = np.floor(raw).astype(int)
    counts[np.argsort(counts - raw, kind="stable")[: n - counts.sum()]] += 1
    return counts


def _by_class(y, weights_of: Callable[[int], Any], k: int, rng: Rng) -> Parts:
    """Deal each class's indices to ``k`` clients by ``weights_of(class)``."""
    parts: list[Parts] = [[] for _ in range(k)]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cuts = np.cumsum(_apportion(len(idx), weights_of(c)))[:-1]
        for part, chunk in zip(parts, np.split(idx, cuts), strict=True):
            part.append(chunk)
    return [rng.permutation(np.concatenate(p)) for p in parts]


def _longtail(y, factor: float, rng: Rng) -> tuple[np.ndarray, list[int]]:
    """Keep floor(n_min * factor^(-c/(C-1))) of class c; n_min = rarest class."""
    n_cls, n_min = int(y.max()) + 1, int(np.bincount(y).min())
    counts = [int(np.floor(n_min * factor ** (-c / (n_cls - 1)))) for c in range(n_cls)]
    keep = [rng.permutation(np.flatnonzero(y == c))[:n] for c, n in enumerate(counts)]
    return np.sort(np.concatenate(keep)), counts


def _assemble(base: Params, parts: Parts, rng: Rng, views=None, tests=None, **meta):
    """Clients from index lists, each seen through its view; test = union."""
    if tests is None:  # deal test rows by the clients' training class counts
        n = np.array([np.bincount(base.y_tr[q], minlength=base.n_cls) for q in parts])
        n[:, n.sum(0) == 0] = 1  # a class no client trains on is dealt evenly
        tests = _by_class(base.y_te, lambda c: n[:, c], len(parts), rng)
    clients = []
    for i, (tr, te) in enumerate(zip(parts, tests, strict=True)):
        view = views[i] if views else (lambda x: x)
        x_tr = np.clip(view(base.x_tr[tr]), 0, 1).astype(np.float32)
        x_te = np.clip(view(base.x_te[te]), 0, 1).astype(np.float32)
        clients.append(ClientData(x_tr, base.y_tr[tr], x_te, base.y_te[te]))
    x_test = np.concatenate([c.x_test for c in clients])
    y_test = np.concatenate([c.y_test for c in clients])
    return FederatedData(clients, x_test, y_test, base.n_cls, {**base.meta, **meta})


def _skew(y, k: int, rng: Rng, p: Params) -> Parts:
    """Label split: Dirichlet(alpha) class shares; IID without alpha or if null."""
    if getattr(p, "alpha", None) is None:
        return np.array_split(rng.permutation(len(y)), k)
    for _ in range(1000):
        parts = _by_class(y, lambda c: rng.dirichlet([p.alpha] * k), k, rng)
        if min(map(len, parts)) >= p.min_size:
            return parts
    raise ValueError(f"Dirichlet({p.alpha}) never gave all clients {p.min_size} rows")


def _quantity(y, k: int, rng: Rng, p: Params) -> Parts:
    """Label split: Dirichlet(quantity_alpha) client sizes, labels mixed."""
    shares = rng.dirichlet([p.quantity_alpha] * k)
    sizes = p.min_size + _apportion(len(y) - k * p.min_size, shares)
    return np.split(rng.permutation(len(y)), np.cumsum(sizes)[:-1])


def _classes(y, k: int, rng: Rng, p: Params) -> Parts:
    """Label split: p.classes = [lo, hi] classes per client, least-used first so
    every class is held; a class's rows are shared evenly among its holders."""
    (lo, hi), n_cls = p.classes, int(y.max()) + 1
    sizes = rng.integers(lo, hi + 1, k)
    if sizes.sum() < n_cls or not 1 <= lo <= hi <= n_cls:
        raise ValueError(f"{k} clients x {lo}-{hi} classes cannot hold {n_cls}")
    usage, member = np.zeros(n_cls), np.zeros((k, n_cls))
    for i, size in enumerate(sizes):  # ties broken at random
        chosen = np.lexsort((rng.random(n_cls), usage))[:size]
        usage[chosen] += 1
        member[i, chosen] = 1
    return _by_class(y, lambda c: member[:, c], k, rng)


def _images(f: Callable[..., np.ndarray], **kw: Any) -> Callable:
    """Apply an image operation to rows that hold flattened 8x8 images."""
    return lambda x: f(x.reshape(-1, 8, 8), **kw).reshape(len(x), -1)


def _noise(k: int, rng: Rng, p: Params):
    """View: Gaussian pixel noise, sigma rising linearly over the clients."""
    sigmas, gens = np.linspace(p.sigma_min, p.sigma_max, k), rng.spawn(k)
    return [
        lambda x, s=s, g=g: x + s * g.standard_normal(x.shape)
        for s, g in zip(sigmas, gens, strict=True)
    ], {"sigmas": sigmas}


def _domains(k: int, rng: Rng, p: Params):
    """View: client i sees domain i (cycled): identity, invert, blur, rotate."""
    from scipy import ndimage  # slow import (0.4 s): only to build

    s, rotate = p.blur_sigma, {"axes": (1, 2), "reshape": False, "order": 1}
    ops = {
        "identity": lambda x: x,
        "invert": lambda x: 1.0 - x,
        "blur": _images(ndimage.gaussian_filter, sigma=(0, s, s)),
        "rotate": _images(ndimage.rotate, angle=p.rotate_deg, **rotate),
    }
    names = [p.domains[i % len(p.domains)] for i in range(k)]
    if unknown := sorted(set(names) - set(ops)):
        raise ValueError(f"unknown domain(s) {unknown}; known: {sorted(ops)}")
    return [ops[name] for name in names], {"client_domain": names}


def _sites(k: int, rng: Rng, p: Params):
    """View: a per-site brightness gain and offset (acquisition shift)."""
    gain, offset = rng.uniform(*p.gains, k), rng.uniform(*p.offsets, k)
    views = [lambda x, a=a, b=b: a * x + b for a, b in zip(gain, offset, strict=True)]
    return views, {"site_gain": gain, "site_offset": offset}


def _styles(k: int, rng: Rng, p: Params):
    """View: per-client contrast (gamma) and stroke ('thick' = 2x2 dilation)."""
    from scipy import ndimage  # slow import (0.4 s): only to build

    strokes = [p.stroke[i % len(p.stroke)] for i in range(k)]
    if not set(strokes) <= {"normal", "thick"}:
        raise ValueError(f"strokes must be 'normal' or 'thick', not {p.stroke}")
    thick = _images(ndimage.grey_dilation, size=(1, 2, 2))
    gammas = np.geomspace(*p.gamma, k)
    return [
        lambda x, gm=gm, s=s: (thick(x) if s == "thick" else x) ** gm
        for gm, s in zip(gammas, strokes, strict=True)
    ], {"client_gamma": gammas, "client_stroke": strokes}


def _writers(k: int, rng: Rng, p: Params):
    """View: per-writer shift and slant up to p.style = [pixels, shear]."""
    from scipy import ndimage  # slow import (0.4 s): only to build

    if p.style is None:
        return None, {}
    style = rng.uniform(-1, 1, (k, 3)) * [p.style[0], p.style[0], p.style[1]]
    views = []
    for dx, dy, s in style:  # output (r, c) reads input (r - dy, c + s(r - 3.5) - dx)
        m, off = [[1, 0, 0], [0, 1, 0], [0, s, 1]], [0, -dy, -dx - 3.5 * s]
        views.append(_images(ndimage.affine_transform, matrix=m, offset=off, order=1))
    return views, {"writer_style": style.round(4)}


def _widths(k: int, rng: Rng, p: Params):
    """View: none; HeteroFL model widths handed to the clients in turn."""
    return None, {"client_width": [p.widths[i % len(p.widths)] for i in range(k)]}


def _flip(data: FederatedData, rng: Rng, p: Params) -> None:
    """Finish: client i relabels exactly round(rate_i * n_i) rows to a random
    other class, the rates rising linearly from rate_min to rate_max."""
    rates = np.linspace(p.rate_min, p.rate_max, len(data.clients))
    for c, rate in zip(data.clients, rates, strict=True):
        idx = rng.choice(len(c.y_train), round(rate * len(c.y_train)), replace=False)
        step = rng.integers(1, data.num_classes, len(idx))  # never the true class
        c.y_train[idx] = (c.y_train[idx] + step) % data.num_classes
    data.meta["flip_rates"] = rates


def _labeled(data: FederatedData, rng: Rng, p: Params) -> None:
    """Finish: reveal a share p.known of each pool (>= 1 row); budget counts."""
    for c in data.clients:
        n = len(c.y_train)
        first = rng.choice(n, max(1, round(p.known * n)), replace=False)
        c.labeled = np.isin(np.arange(n), first)
    sizes = [len(c.y_train) for c in data.clients]
    data.meta["budget_counts"] = [int(p.label_budget * n) for n in sizes]


def _tasks(data: FederatedData, rng: Rng, p: Params) -> None:
    """Finish: disjoint class groups = tasks; clients' rows sorted by task."""
    n_cls, n_tasks = data.num_classes, p.num_tasks
    if n_tasks < 1 or n_cls % n_tasks:
        raise ValueError(f"num_tasks={n_tasks} does not divide {n_cls} classes")
    order = rng.permutation(n_cls) if p.shuffle_classes else np.arange(n_cls)
    task_of = np.empty(n_cls, dtype=np.int64)
    task_of[order] = np.arange(n_cls) // (n_cls // n_tasks)
    for c in data.clients:
        rows = np.argsort(task_of[c.y_train], kind="stable")
        c.x_train, c.y_train = c.x_train[rows], c.y_train[rows]
        c.task_ids = task_of[c.y_train]
    data.task_test = task_of[data.y_test]
    data.meta["tasks"] = order.reshape(n_tasks, -1)


def _recipe(names: str, split, view=None, finish=None) -> Builder:
    """A digits builder: parameter names, label split, view, finishing step.
    An ``imbalance`` parameter first long-tails the training classes."""

    def builder(params: dict, k: int, seed: int) -> FederatedData:
        from sklearn.datasets import load_digits  # slow import: only to build

        p, rng = _params(params, names), np.random.default_rng(seed)
        d = load_digits()  # 1797 images, 8x8, values 0..16
        x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
        base = _split(x, y, seed, "sklearn load_digits", (8, 8))
        keep, meta = np.arange(len(base.y_tr)), {}
        if hasattr(p, "imbalance"):
            keep, meta["class_counts"] = _longtail(base.y_tr, p.imbalance, rng)
        parts = [keep[q] for q in split(base.y_tr[keep], k, rng, p)]
        views, view_meta = view(k, rng, p) if view else (None, {})
        data = _assemble(base, parts, rng, views, **meta, **view_meta)
        if finish:
            finish(data, rng, p)
        return data

    return builder


def _by_user(x, y, g, seed: int, source: str, shape, **meta) -> FederatedData:
    """Scale a synthetic set into [0, 1]; one client per user, own test rows."""
    x = (0.5 + 0.5 * x / np.abs(x).max()).reshape(len(x), -1).astype(np.float32)
    base = _split(x, y.astype(np.int64), seed, source, shape, g)
    users = range(int(g.max()) + 1)
    parts = [np.flatnonzero(base.g_tr == u) for u in users]
    tests = [np.flatnonzero(base.g_te == u) for u in users]
    return _assemble(base, parts, np.random.default_rng(seed), tests=tests, **meta)


def har_synthetic(params: dict, k: int, seed: int) -> FederatedData:
    """Q5: 6 activities as per-channel sinusoids; users shift frequency, channel
    amplitude (sensor placement) and phase by up to p.jitter (rel, rel, rad)."""
    p = _params(params, "timesteps channels per_user jitter noise data_seed")
    r, ch, n, n_cls = np.random.default_rng(p.data_seed), p.channels, p.per_user, 6
    ranges = [(0.5, 3.0), (0.5, 1.5), (0.0, 2 * np.pi), (-0.5, 0.5)]
    freq, amp, phase, level = (r.uniform(lo, hi, (n_cls, 1, ch)) for lo, hi in ranges)
    u_freq, u_phase = (r.uniform(-j, j, (k, 1, 1)) for j in p.jitter[::2])
    u_amp = r.uniform(-p.jitter[1], p.jitter[1], (k, 1, ch))
    y = np.tile(np.repeat(np.arange(n_cls), n), k)
    g = np.repeat(np.arange(k), n_cls * n)
    t = (np.arange(p.timesteps) / p.timesteps)[None, :, None]
    wave = np.sin(2 * np.pi * freq[y] * (1 + u_freq[g]) * t + phase[y] + u_phase[g])
    x = level[y] + amp[y] * (1 + u_amp[g]) * wave
    x = x + p.noise * r.standard_normal(x.shape)
    shape, meta = (p.timesteps, ch), {"user_freq": 1 + u_freq.ravel()}
    return _by_user(x, y, g, seed, "synthetic HAR", shape, **meta)


def speech_synthetic(params: dict, k: int, seed: int) -> FederatedData:
    """Q6: keyword prototypes (frames x coefficients, MFCC-like); each speaker
    scales and shifts every coefficient, p.speaker = [scale sd, shift sd]."""
    p = _params(params, "keywords frames coeffs per_speaker speaker noise data_seed")
    r, n = np.random.default_rng(p.data_seed), p.per_speaker
    shape = (p.frames, p.coeffs)
    proto = r.standard_normal((p.keywords, *shape))
    scale, shift = (s * r.standard_normal((k, 1, p.coeffs)) for s in p.speaker)
    y = np.tile(np.repeat(np.arange(p.keywords), n), k)
    g = np.repeat(np.arange(k), p.keywords * n)
    x = proto[y] + p.noise * r.standard_normal((len(y), *shape))
    x, meta = x * (1 + scale[g]) + shift[g], {"speaker_shift": shift[:, 0]}
    return _by_user(x, y, g, seed, "synthetic keywords", shape, **meta)


PARTITIONS: dict[str, Builder] = {
    "longtail_quantity": _recipe("imbalance quantity_alpha min_size", _quantity),
    "feature_noise": _recipe("sigma_min sigma_max", _skew, _noise),
    "label_flip": _recipe("rate_min rate_max", _skew, finish=_flip),
    "domain_shift": _recipe("domains blur_sigma rotate_deg", _skew, _domains),
    "har_synthetic": har_synthetic,
    "speech_synthetic": speech_synthetic,
    "site_shift": _recipe("alpha gains offsets min_size", _skew, _sites),
    "style_imbalance": _recipe("imbalance alpha gamma stroke min_size", _skew, _styles),
    "hetero_width": _recipe("widths", _skew, _widths),
    "partial_participation": _recipe("alpha participation min_size", _skew),
    "writer_noniid": _recipe("alpha style rounds_budget min_size", _skew, _writers),
    "class_subsets": _recipe("classes style", _classes, _writers),
    "active_pool": _recipe("alpha known label_budget min_size", _skew, None, _labeled),
    "split_tasks": _recipe("num_tasks shuffle_classes", _skew, finish=_tasks),
}


def build(task: BenchTask, seed: int) -> FederatedData:
    """The task's substitute (same seed, same data); params also top-level in meta."""
    sub = task.substitute
    if sub.partition not in PARTITIONS:
        raise KeyError(f"task {task.id}: unknown partition {sub.partition!r}")
    try:
        data = PARTITIONS[sub.partition](dict(sub.params), sub.clients, seed)
    except ValueError as exc:
        raise ValueError(f"task {task.id} ({sub.partition}): {exc}") from exc
    meta = {"task_id": task.id, "builder": sub.partition, "seed": seed}
    meta |= {"metric": task.metric, "num_classes": data.num_classes}
    meta |= {**sub.params, "params": sub.params, "num_clients": len(data.clients)}
    meta["train_sizes"] = [len(c.y_train) for c in data.clients]
    meta["test_sizes"] = [len(c.y_test) for c in data.clients]
    meta = json.dumps({**meta, **data.meta}, default=lambda v: v.tolist())
    data.meta = json.loads(meta)  # numpy values become plain JSON types
    return data

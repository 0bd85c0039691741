"""The offline substitutes checked against facts worked out here, apart from
the builders: the 80/20 split arithmetic, the long-tail counts, flip rates
measured against the clean labels, pixel identities of the domain views."""

from __future__ import annotations

import dataclasses
import json
import math
import zipfile
from collections import Counter

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from evoflow.helmsman import partitions
from evoflow.helmsman.bench import get_task
from evoflow.helmsman.datafile import load, save
from evoflow.helmsman.partitions import build

IDS = [f"Q{i}" for i in range(1, 17)]
N_DIGITS, N_SYNTH = 1797, 1800  # Q5: 15 users x 6 classes x 20; Q6: 15 x 10 x 12
N_TEST = math.ceil(0.2 * N_DIGITS)  # sklearn rounds the test share up: 360
N_TRAIN = N_DIGITS - N_TEST  # 1437
SYNTH_TRAIN = N_SYNTH - math.ceil(0.2 * N_SYNTH)  # 1440


@pytest.fixture(scope="module")
def built():
    return {task_id: build(get_task(task_id), seed=0) for task_id in IDS}


@pytest.fixture(scope="module")
def split():
    """The stratified, seeded 80/20 split of the digits, made here."""
    d = load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=0.2, stratify=y, random_state=0
    )
    return x_tr, x_te, y_tr, y_te


def _rows(x: np.ndarray, y: np.ndarray | None = None) -> Counter:
    labels = [None] * len(x) if y is None else y.tolist()
    return Counter(zip((row.tobytes() for row in x), labels, strict=True))


def _train(data, attr: str = "x_train") -> np.ndarray:
    return np.concatenate([getattr(c, attr) for c in data.clients])


def _with_params(task_id: str, **params):
    task = get_task(task_id)
    new = {**task.substitute.params, **params}
    return dataclasses.replace(
        task, substitute=dataclasses.replace(task.substitute, params=new)
    )


def _longtail_counts(y_train: np.ndarray, factor: float) -> list[int]:
    n_min = np.bincount(y_train).min()
    return [math.floor(n_min * factor ** (-c / 9)) for c in range(10)]


def _top_share(data) -> float:
    """Mean over clients of the largest class share (about 0.1 when IID)."""
    shares = [
        np.bincount(c.y_train, minlength=10).max() / len(c.y_train)
        for c in data.clients
    ]
    return float(np.mean(shares))


@pytest.mark.parametrize("task_id", IDS)
def test_arrays_types_and_global_test_set(built, task_id):
    data = built[task_id]
    dim = 64
    for c in data.clients:
        assert c.x_train.dtype == c.x_test.dtype == np.float32
        assert c.y_train.dtype == c.y_test.dtype == np.int64
        assert c.x_train.shape == (len(c.y_train), dim) and len(c.y_train) > 0
        assert 0.0 <= c.x_train.min() and c.x_train.max() <= 1.0
        assert set(np.unique(c.y_train)) <= set(range(data.num_classes))
    synthetic = task_id in ("Q5", "Q6")
    assert len(data.y_test) == N_TEST  # 0.2 * 1800 = 360 as well
    assert np.array_equal(data.x_test, np.concatenate([c.x_test for c in data.clients]))
    assert np.array_equal(data.y_test, np.concatenate([c.y_test for c in data.clients]))
    assert math.prod(data.meta["sample_shape"]) == dim
    assert data.meta["task_id"] == task_id and data.meta["seed"] == 0
    assert data.meta["train_sizes"] == [len(c.y_train) for c in data.clients]
    assert len(data.clients) == get_task(task_id).substitute.clients
    expected_train = SYNTH_TRAIN if synthetic else N_TRAIN
    if task_id not in ("Q1", "Q8"):  # the long-tail tasks drop rows on purpose
        assert sum(data.meta["train_sizes"]) == expected_train
    json.dumps(data.meta)


@pytest.mark.parametrize("task_id", ["Q3", "Q9", "Q10", "Q13", "Q14", "Q15", "Q16"])
def test_training_rows_are_exactly_the_80_percent_split(built, split, task_id):
    data = built[task_id]
    x_tr, x_te, y_tr, y_te = split
    labels = None if task_id == "Q3" else y_tr  # Q3 changes labels on purpose
    got = _train(data), None if labels is None else _train(data, "y_train")
    assert _rows(*got) == _rows(x_tr, labels)
    assert _rows(data.x_test, data.y_test) == _rows(x_te, y_te)


@pytest.mark.parametrize("task_id", ["Q2", "Q9", "Q12", "Q16"])
def test_same_seed_same_data_other_seed_other_data(built, task_id):
    again, other = build(get_task(task_id), 0), build(get_task(task_id), 1)
    first = built[task_id]
    for a, b in zip(first.clients, again.clients, strict=True):
        assert np.array_equal(a.x_train, b.x_train) and np.array_equal(
            a.y_train, b.y_train
        )
        assert np.array_equal(a.x_test, b.x_test)
    assert first.meta == again.meta
    assert not np.array_equal(first.clients[0].x_train, other.clients[0].x_train)


def test_q1_long_tail_and_quantity_skew(built, split):
    data, (x_tr, _, y_tr, y_te) = built["Q1"], split
    counts = _longtail_counts(y_tr, 20)
    assert counts[0] == np.bincount(y_tr).min() and counts[-1] < counts[0] / 19
    assert np.bincount(_train(data, "y_train"), minlength=10).tolist() == counts
    held, pool = _rows(_train(data), _train(data, "y_train")), _rows(x_tr, y_tr)
    assert all(pool[key] >= n for key, n in held.items())  # a subset, no duplicates
    sizes = data.meta["train_sizes"]
    assert min(sizes) >= 5 and max(sizes) / min(sizes) > 5
    assert np.array_equal(np.bincount(data.y_test), np.bincount(y_te))  # balanced test


def test_q2_noise_grows_with_each_clients_sigma(built):
    noisy, clean = (
        built["Q2"],
        build(_with_params("Q2", sigma_min=0.0, sigma_max=0.0), 0),
    )
    sigmas = np.linspace(0.1, 0.6, 15)
    assert noisy.meta["sigmas"] == pytest.approx(sigmas.tolist())
    spread = []
    for a, b in zip(noisy.clients, clean.clients, strict=True):
        assert np.array_equal(a.y_train, b.y_train)
        middle = (b.x_train > 0.3) & (b.x_train < 0.7)  # far from the clipping at 0, 1
        spread.append(float(np.std((a.x_train - b.x_train)[middle])))
    assert spread[0] == pytest.approx(0.1, rel=0.1)  # the smallest sigma, unclipped
    assert np.corrcoef(sigmas, spread)[0, 1] > 0.95
    assert np.mean(spread[-5:]) > np.mean(spread[:5]) + 0.1


def test_q3_measured_flip_rates_match_the_configured_ones(built, split):
    data, (x_tr, x_te, y_tr, y_te) = built["Q3"], split
    truth: dict[bytes, set[int]] = {}
    for row, label in zip(x_tr, y_tr, strict=True):
        truth.setdefault(row.tobytes(), set()).add(int(label))
    rates = np.linspace(0.0, 0.5, 15)
    for c, rate in zip(data.clients, rates, strict=True):
        clean = [truth[row.tobytes()] for row in c.x_train]
        known = [len(labels) == 1 for labels in clean]  # skip ambiguous duplicates
        flipped = [y not in labels for y, labels in zip(c.y_train, clean, strict=True)]
        measured = np.mean(np.array(flipped)[known])
        assert abs(measured - rate) <= 1.5 / len(c.y_train) + 0.01
    assert data.clients[0].y_train.tolist() == [
        next(iter(truth[row.tobytes()])) for row in data.clients[0].x_train
    ]
    test_truth = {row.tobytes(): int(y) for row, y in zip(x_te, y_te, strict=True)}
    assert all(
        test_truth[row.tobytes()] == y
        for row, y in zip(data.x_test, data.y_test, strict=True)
    )


def test_q4_each_client_sees_its_domain(built, split):
    data, x_tr = built["Q4"], split[0]
    assert data.meta["client_domain"] == ["identity", "invert", "blur", "rotate"]
    identity, invert, blur, rotate = data.clients
    pool = _rows(x_tr)
    assert _rows(identity.x_train).keys() <= pool.keys()
    assert _rows((1.0 - invert.x_train).astype(np.float32)).keys() <= pool.keys()
    assert invert.x_train.mean() == pytest.approx(1 - identity.x_train.mean(), abs=0.02)
    assert invert.x_test.mean() == pytest.approx(1 - identity.x_test.mean(), abs=0.03)

    def roughness(x: np.ndarray) -> float:
        return float(np.abs(np.diff(x.reshape(-1, 8, 8), axis=2)).mean())

    assert roughness(blur.x_train) < 0.7 * roughness(identity.x_train)
    assert not _rows(rotate.x_train).keys() & pool.keys()
    assert sum(len(c.y_test) for c in data.clients) == N_TEST  # all four domains


def _between_users(data) -> float:
    """How far apart the clients' mean feature vectors are."""
    return float(np.var([c.x_train.mean(0) for c in data.clients], axis=0).mean())


def _shuffled_baseline(data) -> float:
    x = _train(data)[
        np.random.default_rng(0).permutation(sum(data.meta["train_sizes"]))
    ]
    cuts = np.cumsum(data.meta["train_sizes"])[:-1]
    return float(np.var([part.mean(0) for part in np.split(x, cuts)], axis=0).mean())


@pytest.mark.parametrize(("task_id", "classes"), [("Q5", 6), ("Q6", 10)])
def test_q5_q6_one_user_per_client_with_its_own_shift(built, task_id, classes):
    data = built[task_id]
    assert data.num_classes == classes
    assert all(len(np.unique(c.y_train)) == classes for c in data.clients)
    assert _between_users(data) > 3 * _shuffled_baseline(data)


def test_q5_shape_is_time_by_channel(built):
    assert built["Q5"].meta["sample_shape"] == [16, 4]


def test_q7_sites_skew_labels_and_shift_brightness(built):
    data = built["Q7"]
    assert len(data.clients) == 5 and _top_share(data) > 0.25  # IID: about 0.12
    assert all(0.6 <= g <= 1.4 for g in data.meta["site_gain"])
    assert all(-0.2 <= b <= 0.2 for b in data.meta["site_offset"])
    assert min(data.meta["train_sizes"]) >= 10


def test_q8_imbalance_and_styles(built, split):
    data = built["Q8"]
    counts = _longtail_counts(split[2], 10)
    assert np.bincount(_train(data, "y_train"), minlength=10).tolist() == counts
    assert data.meta["client_stroke"] == ["normal", "thick"] * 7 + ["normal"]
    assert data.meta["client_gamma"] == pytest.approx(np.geomspace(0.5, 2.0, 15))


def test_q9_widths_and_q10_participation(built):
    widths = built["Q9"].meta["client_width"]
    assert Counter(widths) == {1.0: 5, 0.5: 5, 0.25: 5}
    sizes = built["Q9"].meta["train_sizes"]
    assert max(sizes) - min(sizes) <= 1
    assert built["Q10"].meta["participation"] == 0.3
    assert int(0.3 * len(built["Q10"].clients)) == 4  # clients per Flower round


def test_q11_writers_and_round_budget(built):
    data = built["Q11"]
    assert data.meta["rounds_budget"] == 20 and get_task("Q11").paper.rounds == 100
    styles = np.array(data.meta["writer_style"])
    assert styles.shape == (15, 3)
    assert np.abs(styles[:, :2]).max() <= 1.0 and np.abs(styles[:, 2]).max() <= 0.3


@pytest.mark.parametrize("task_id", ["Q12", "Q13"])
def test_q12_q13_few_classes_and_local_tests_from_them(built, task_id):
    data = built[task_id]
    held = set()
    for c in data.clients:
        classes = set(np.unique(c.y_train).tolist())
        assert 2 <= len(classes) <= 3
        assert set(c.y_test.tolist()) <= classes and len(c.y_test) > 0
        held |= classes
    assert held == set(range(10))


@pytest.mark.parametrize(("task_id", "clients"), [("Q14", 5), ("Q15", 15)])
def test_q14_q15_labelled_share_and_budget(built, task_id, clients):
    data = built[task_id]
    assert len(data.clients) == clients and data.meta["label_budget"] == 0.2
    for c, budget in zip(data.clients, data.meta["budget_counts"], strict=True):
        n = len(c.y_train)
        assert c.labeled.dtype == bool and c.labeled.shape == (n,)
        assert c.labeled.sum() == max(1, round(0.05 * n))
        assert budget == int(0.2 * n) > c.labeled.sum()
    if task_id == "Q15":
        assert _top_share(data) > 0.25


def test_q16_disjoint_tasks_in_order(built):
    data = built["Q16"]
    tasks = data.meta["tasks"]
    assert len(tasks) == 5 and all(len(pair) == 2 for pair in tasks)
    assert sorted(c for pair in tasks for c in pair) == list(range(10))
    task_of = {c: t for t, pair in enumerate(tasks) for c in pair}
    for c in data.clients:
        assert c.task_ids.tolist() == [task_of[y] for y in c.y_train.tolist()]
        assert np.all(np.diff(c.task_ids) >= 0) and set(c.task_ids.tolist()) == set(
            range(5)
        )
    assert data.task_test.tolist() == [task_of[y] for y in data.y_test.tolist()]


def test_unknown_parameters_name_the_task():
    with pytest.raises(ValueError, match=r"task Q7 \(site_shift\).*bogus"):
        build(_with_params("Q7", bogus=1), 0)


@pytest.mark.parametrize("task_id", ["Q1", "Q14", "Q16"])
def test_save_and_load_round_trip(built, tmp_path, task_id):
    data = built[task_id]
    path = save(data, tmp_path / "data.npz")
    assert [p.name for p in tmp_path.iterdir()] == ["data.npz"]  # no temp file left
    back = load(path)
    assert back.meta == data.meta and back.num_classes == data.num_classes
    for field in ("x_test", "y_test", "task_test"):
        a, b = getattr(data, field), getattr(back, field)
        assert (a is None and b is None) or (
            np.array_equal(a, b) and a.dtype == b.dtype
        )
    for a, b in zip(data.clients, back.clients, strict=True):
        for field in ("x_train", "y_train", "x_test", "y_test", "labeled", "task_ids"):
            x, y = getattr(a, field), getattr(b, field)
            assert (x is None and y is None) or (
                np.array_equal(x, y) and x.dtype == y.dtype
            )
    with zipfile.ZipFile(path) as archive:
        names = {name.removesuffix(".npy") for name in archive.namelist()}
    assert {"x_train_0", "y_train_0", "x_test_0", "y_test_0", "meta"} <= names


def test_a_failed_save_keeps_the_old_file(built, tmp_path, monkeypatch):
    path = save(built["Q9"], tmp_path / "data.npz")
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(partitions.np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        save(built["Q2"], path)
    assert path.read_bytes() == before and len(list(tmp_path.iterdir())) == 1


def test_damaged_or_incomplete_files_are_refused(built, tmp_path):
    good = save(built["Q9"], tmp_path / "good.npz").read_bytes()
    cases = {
        "truncated.npz": good[: len(good) // 2],
        "garbage.npz": b"not an archive at all" * 50,
        "empty.npz": b"",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match=name):
            load(tmp_path / name)
    np.save(tmp_path / "array.npy", np.zeros(3))
    with pytest.raises(ValueError, match="array.npy"):
        load(tmp_path / "array.npy")
    with np.load(tmp_path / "good.npz") as npz:
        arrays = {key: npz[key] for key in npz.files}
    np.savez(
        tmp_path / "partial.npz",
        **{k: v for k, v in arrays.items() if k != "y_train_2"},
    )
    with pytest.raises(ValueError, match=r"partial.npz: missing key.*y_train_2"):
        load(tmp_path / "partial.npz")
    np.savez(
        tmp_path / "nometa.npz", **{k: v for k, v in arrays.items() if k != "meta"}
    )
    with pytest.raises(ValueError, match="nometa.npz: missing or bad key 'meta'"):
        load(tmp_path / "nometa.npz")
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "absent.npz")

"""Train, validation and test splits: disjoint by id and by content, test frozen.

Settings are chosen on validation tasks, never on the test tasks results are
reported on; so no two splits may share a task, under the same id or another
(``TextEnv.content_key``), and the test split must stay the one published.
"""

from __future__ import annotations

import hashlib
from itertools import combinations

import pytest
from fastapi.testclient import TestClient

from evoflow.config import load_config
from evoflow.envs import REGISTRY, EnvError, env_class, make_env, split_ids
from evoflow.envs.base import SPLITS
from evoflow.envs.doors import DoorsEnv
from evoflow.envs.remote import RemoteEnv
from evoflow.envs.server import create_app
from evoflow.envs.splits import render_splits
from evoflow.envs.textcraft import TextCraftEnv, goals
from tests.helpers import require_java

NAMES = sorted(REGISTRY)
# sha256 of "\n".join(test ids) of data/splits/<env>.json as committed before the
# validation split existed (commit 9cb7f6d): published numbers are on these.
TEST_SHA256 = {
    "babyai": "50f35c548c75c1297be6cd87de2a83e8581aa91e08825dde8db6c5b5860fef22",
    "doors": "b55dac075113baa03345ca17132d914a8e801dd246d5e6b747d4f5c358dc994e",
    "maze": "4713cadab0a9b6479badf16e223d3bc78afde3ddaf0306a1cdf6bee44c17fcef",
    "sciworld": "edfca567b69c2ab7aa9b3ed9c6d7e3f80c147078faf3edaa1a4b1da47ff263f7",
    "textcraft": "31457c240ea36a8771f9303c995046c4e83777ddf019a5d4737ed2d1191467a2",
    "webshop": "44e8e2c2181c7153726eb7e0da3c9356b23e3782cd3eeebe549e249e5e80fac0",
    "wordle": "4713cadab0a9b6479badf16e223d3bc78afde3ddaf0306a1cdf6bee44c17fcef",
}
# Validation tasks wanted of each stratum the embedded experiment draws from.
# WebShop has 42 tasks of 2 requirements in all, 3 of them in test: validation
# takes 20 and leaves training the other 19.
VALIDATION_MINIMUM = {
    ("babyai", "goto"): 40,
    ("textcraft", "depth 1"): 40,
    ("maze", "distance 1-4"): 40,
    ("maze", "distance 5-8"): 40,
    ("wordle", "vocab40"): 40,
    ("webshop", "2 requirements"): 20,
    ("webshop", "3 requirements"): 40,
}


@pytest.fixture(autouse=True)
def _simulator_available(request):
    """SciWorld needs Java: skip with the reason, or fail on CI (``require_java``)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("name") == "sciworld":
        require_java()


def digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


@pytest.mark.parametrize("name", NAMES)
def test_the_three_splits_share_no_task_id_and_no_task_content(name):
    # Prepare
    env, key = make_env(name), env_class(name).content_key

    # Execute
    ids = {split: env.task_ids(split) for split in SPLITS}
    keys = {split: {key(t) for t in ids[split]} for split in SPLITS}

    # Assert
    assert SPLITS == ("train", "validation", "test")
    for split in SPLITS:
        assert len(set(ids[split])) == len(ids[split]) > 0, split
    for first, second in combinations(SPLITS, 2):
        assert not set(ids[first]) & set(ids[second]), (first, second)
        assert not keys[first] & keys[second], (first, second)


@pytest.mark.parametrize("name", NAMES)
def test_the_test_split_is_the_published_one(name):
    # Execute
    committed = make_env(name).task_ids("test")
    built = env_class(name).build_splits()["test"]

    # Assert
    assert digest(committed) == digest(built) == TEST_SHA256[name]


def test_validation_holds_every_embedded_stratum():
    # Prepare
    embedded = load_config("config/config.yaml")["envs"]
    wanted = {(env, s) for env, entry in embedded.items() for s in entry["strata"]}

    # Execute
    counts = {
        (env, stratum): len(split_ids(env, "validation", strata=[stratum]))
        for env, stratum in VALIDATION_MINIMUM
    }

    # Assert
    assert wanted <= set(VALIDATION_MINIMUM)
    assert {k: n for k, n in counts.items() if n < VALIDATION_MINIMUM[k]} == {}


def test_validation_mirrors_the_kind_of_tasks_of_the_test_split():
    # Maze: double-T tasks, not only carved mazes; TextCraft: variant 0 of
    # goals of its own; Wordle: AgentGym's 40 words
    from evoflow.envs.maze import DOUBLE_T, layout_for
    from evoflow.envs.textcraft_tasks import decode

    maze = split_ids("maze", "validation")
    assert all(layout_for(t).grid == DOUBLE_T for t in maze)
    textcraft = split_ids("textcraft", "validation")
    assert {decode(t)[1] for t in textcraft} == {0}
    assert {env_class("wordle").stratum(t) for t in split_ids("wordle", "validation")
            } == {"vocab40"}  # fmt: skip


def test_strata_filter_the_validation_split():
    # Execute
    near = split_ids("maze", "validation", strata=["distance 1-4"])
    goto = split_ids("babyai", "validation", strata=["goto"])

    # Assert
    assert set(near) < set(split_ids("maze", "validation"))
    assert {env_class("maze").stratum(t) for t in near} == {"distance 1-4"}
    assert {env_class("babyai").stratum(t) for t in goto} == {"goto"}
    assert min(map(int, goto)) > max(map(int, split_ids("babyai", "train")))


def test_render_splits_refuses_a_task_id_in_two_splits(monkeypatch):
    # Prepare
    real = DoorsEnv.build_splits()
    shared = {**real, "validation": real["validation"] + real["test"][:2]}
    monkeypatch.setattr(DoorsEnv, "build_splits", classmethod(lambda cls: shared))

    # Execute / Assert
    with pytest.raises(
        ValueError,
        match=r"doors: splits validation and test share task ids \['0', '1'\]",
    ):
        render_splits("doors")


def test_render_splits_refuses_one_task_under_two_ids(monkeypatch):
    # Prepare: a test goal with its other distractor variant, in validation
    real = TextCraftEnv.build_splits()
    goal = real["test"][0]
    twin = str(int(goal) + len(goals()))
    shared = {**real, "validation": [*real["validation"], twin]}
    monkeypatch.setattr(TextCraftEnv, "build_splits", classmethod(lambda cls: shared))

    # Execute / Assert
    with pytest.raises(ValueError) as refused:
        render_splits("textcraft")
    message = str(refused.value)
    assert message.startswith(
        f"textcraft: splits validation and test share task content under "
        f"different ids: {twin} ~ {goal} ({TextCraftEnv.content_key(goal)})"
    )


def test_render_splits_refuses_a_missing_split(monkeypatch):
    real = DoorsEnv.build_splits()
    two = {"train": real["train"], "test": real["test"]}
    monkeypatch.setattr(DoorsEnv, "build_splits", classmethod(lambda cls: two))
    with pytest.raises(ValueError, match="doors: build_splits gave splits"):
        render_splits("doors")


def test_content_keys_name_what_a_task_is():
    # two distractor variants of one TextCraft goal are one task; so are two
    # WebShop goals that read alike; Wordle's key is its vocabulary and seed
    textcraft = env_class("textcraft")
    assert textcraft.content_key("3") == textcraft.content_key(str(3 + len(goals())))
    webshop = env_class("webshop")
    assert webshop.content_key("886") == webshop.content_key("2549")
    assert env_class("wordle").content_key("600") == "vocab40/seed 600"
    assert env_class("maze").content_key("0") == "double-T goal 8,6 start 1,1"
    assert env_class("babyai").content_key("41") == "GoToRedBall/seed 1"
    assert env_class("doors").content_key("300") == "300"


@pytest.mark.filterwarnings("ignore:You should not use the 'timeout' argument")
def test_our_server_lists_the_validation_split():
    # Prepare
    local = make_env("wordle")
    with TestClient(create_app("wordle")) as client:
        # Execute
        info = client.get("/v1/info").json()
        remote = RemoteEnv("http://testserver", client=client)
        listed = remote.task_ids("validation")

    # Assert
    assert info["splits"] == {s: len(local.task_ids(s)) for s in SPLITS}
    assert listed == local.task_ids("validation")


def test_agentgym_validation_ids_come_from_the_config():
    # Prepare
    remote = {"url": "http://127.0.0.1:9", "protocol": "agentgym"}

    # Execute / Assert: no request is made either way
    assert split_ids("maze", "validation", {**remote, "validation_ids": ["7"]}) == ["7"]
    with pytest.raises(EnvError, match=r"set envs\.maze\.remote\.validation_ids"):
        split_ids("maze", "validation", remote)

"""AgentFL-Bench's task table against the paper's setup (SPEC section 4.2)."""

from __future__ import annotations

import dataclasses
import tomllib
from importlib import resources
from pathlib import Path

import pytest
import yaml

from evoflow.helmsman.bench import get_task, load_tasks
from evoflow.helmsman.partitions import PARTITIONS

ROOT = Path(__file__).resolve().parents[2]
IDS = [f"Q{i}" for i in range(1, 17)]
# The specialised baseline family per challenge (SPEC 4.2); None = not stated.
SPECIALISED = {
    "Q1": None, "Q2": "FedNS", "Q3": "FedNS", "Q4": "FedNova", "Q5": "FedNova",
    "Q6": "FedNova", "Q7": "FedNova", "Q8": "FedNova", "Q9": "HeteroFL", "Q10": None,
    "Q11": None, "Q12": "FedPer", "Q13": "FedPer", "Q14": "FAST", "Q15": "FAST",
    "Q16": "FedWeIT",
}  # fmt: skip
CROSS_SILO = {"Q4": 4, "Q7": 5, "Q14": 5}  # hospitals / cameras; the rest: 15 devices
NUMBER_WORDS = {4: "four", 5: "five", 15: "15"}


@pytest.fixture(scope="module")
def tasks():
    return {task.id: task for task in load_tasks()}


def _raw() -> dict:
    text = resources.files("evoflow.helmsman").joinpath("tasks.yaml").read_text()
    return yaml.safe_load(text)


def _write(tmp_path: Path, doc) -> Path:
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_sixteen_tasks_in_order(tasks):
    assert list(tasks) == IDS


def test_metric_follows_the_paper(tasks):
    expected = {
        "Q12": "client_accuracy",
        "Q13": "client_accuracy",
        "Q16": "task_accuracy",
    }
    for task_id, task in tasks.items():
        assert task.metric == expected.get(task_id, "global_accuracy"), task_id


def test_specialised_baseline_follows_the_paper(tasks):
    assert {task_id: task.specialised for task_id, task in tasks.items()} == SPECIALISED


def test_protocol_rounds_local_steps_and_clients(tasks):
    for task_id, task in tasks.items():
        clients = CROSS_SILO.get(task_id, 15)
        assert (task.paper.rounds, task.paper.local_steps) == (100, 5)
        assert task.paper.clients == task.substitute.clients == clients, task_id
        silo = task_id in CROSS_SILO
        assert task.paper.scenario == ("cross-silo" if silo else "cross-device")


def test_substitutes_name_a_builder_and_say_what_they_lose(tasks):
    for task in tasks.values():
        assert task.substitute.partition in PARTITIONS
        assert "keeps" in task.substitute.note and "loses" in task.substitute.note


def test_queries_have_three_parts_and_the_papers_setup(tasks):
    for task in tasks.values():
        parts = ["Problem statement:", "Task description:", "Framework requirement:"]
        assert [task.query.count(part) for part in parts] == [1, 1, 1], task.id
        assert task.paper.model.split(" (")[0] in task.query, task.id
        assert task.paper.dataset.split(" (")[0] in task.query, task.id
        assert NUMBER_WORDS[task.paper.clients] in task.query, task.id


def test_flags_carry_the_papers_contradictions(tasks):
    def flags(task_id: str) -> str:
        return " ".join(tasks[task_id].flags)

    assert "CIFAR-100-C" in flags("Q2") and "FEMNIST" in flags("Q2")
    assert "CIFAR-100" in flags("Q9") and "CIFAR-10 " in flags("Q9")
    assert "object detection" in flags("Q10")
    assert "does not bind" in flags("Q11")
    assert "MobileNet-V2" in flags("Q14") and "CNN" in flags("Q14")
    assert "forgetting" in flags("Q16")
    for task_id, task in tasks.items():
        ten_vs_fifteen = "10 in the text" in flags(task_id)
        assert ten_vs_fifteen == (task.paper.scenario == "cross-device"), task_id


def test_get_task_and_unknown_ids():
    assert get_task("Q7").paper.dataset == "Fed-ISIC2019"
    with pytest.raises(KeyError, match="Q1, Q2.*Q16"):
        get_task("Q17")


def test_tasks_are_frozen(tasks):
    with pytest.raises(dataclasses.FrozenInstanceError):
        tasks["Q1"].metric = "task_accuracy"


def test_tasks_yaml_ships_as_package_data():
    assert resources.files("evoflow.helmsman").joinpath("tasks.yaml").is_file()
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "setuptools"
    ]
    assert "*.yaml" in setuptools["package-data"]["evoflow.helmsman"]


def test_a_copy_of_the_table_loads_from_a_path(tmp_path):
    assert load_tasks(_write(tmp_path, _raw())) == load_tasks()


def _without(block: str | None, key: str):
    def edit(task: dict) -> None:
        del (task[block] if block else task)[key]

    return edit


def _set(block: str | None, key: str, value):
    def edit(task: dict) -> None:
        (task[block] if block else task)[key] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (_without(None, "metric"), "'metric'"),
        (_without("paper", "rounds"), "'paper.rounds'"),
        (_without("substitute", "note"), "'substitute.note'"),
        (_set(None, "metric", "f1"), "'metric'"),
        (_set(None, "flags", "one flag"), "'flags'"),
        (_set(None, "specialised", ""), "'specialised'"),
        (_set("paper", "rounds", "100"), "'paper.rounds'"),
        (_set("paper", "scenario", "cross-cloud"), "'paper.scenario'"),
        (_set("substitute", "partition", "no_such_builder"), "'substitute.partition'"),
        (_set("substitute", "clients", 0), "'substitute.clients'"),
        (_set(None, "extra", 1), "'extra'"),
        (_set("paper", "gpus", 8), "'paper.gpus'"),
        (_set(None, "paper", "CIFAR"), "paper must be a mapping"),
    ],
)
def test_a_bad_task_names_its_id_and_key(tmp_path, edit, key):
    doc = _raw()
    edit(doc["tasks"][2])
    with pytest.raises(ValueError, match="task Q3") as caught:
        load_tasks(_write(tmp_path, doc))
    assert key in str(caught.value)


def test_duplicate_ids_and_bad_files_are_refused(tmp_path):
    doc = _raw()
    doc["tasks"][1]["id"] = "Q1"
    with pytest.raises(ValueError, match="task Q1: duplicate key 'id'"):
        load_tasks(_write(tmp_path, doc))
    with pytest.raises(ValueError, match="'tasks' list"):
        load_tasks(_write(tmp_path, ["Q1"]))
    bad = tmp_path / "broken.yaml"
    bad.write_text("tasks: [unclosed\n")
    with pytest.raises(ValueError, match="broken.yaml: not valid YAML"):
        load_tasks(bad)

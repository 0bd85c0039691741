"""SciWorld on the ScienceWorld simulator: AgentGym's ids, scores, routes and a
bounded JVM."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from evoflow.envs import Step, make_env, play_expert, replay
from evoflow.envs.remote import RemoteEnv
from evoflow.envs.sciworld import AGENTGYM_EXCLUDED, SciWorldEnv, game_for, games
from evoflow.envs.sciworld_sim import POOL, SimulatorPool
from evoflow.envs.server import create_app
from tests.helpers import require_java

pytestmark = pytest.mark.usefixtures("java")


@pytest.fixture(scope="module")
def java():
    require_java()


def test_ids_follow_agentgyms_game_list():
    # AgentGym lists tasks in the simulator's order without 5-x, 9-x and 10-x,
    # each with all its variations: boil, melt, freeze and change-of-state have
    # 30 each and use-thermometer 540, so ids 0, 30 and 120 start those tasks.
    listing = games()
    assert listing[0] == ("boil", 0) and listing[29] == ("boil", 29)
    assert listing[30] == ("melt", 0)
    assert listing[120] == ("use-thermometer", 0)
    assert listing[660] == ("measure-melting-point-known-substance", 0)
    assert len(listing) == 4639 and listing[-1] == ("identify-life-stages-2", 9)
    names = {name for name, _ in listing}
    assert len(names) == 30 - len(AGENTGYM_EXCLUDED)
    assert not names & {"grow-plant", "inclined-plane-determine-angle",
                        "mendelian-genetics-known-plant"}  # fmt: skip


def test_splits_use_scienceworlds_own_variation_split():
    env = make_env("sciworld")
    test, validation = env.task_ids("test"), env.task_ids("validation")
    with POOL.leased() as simulator:
        held_out = {name: simulator.variations(name)
                    for name in {game_for(i)[0] for i in test}}  # fmt: skip
    assert all(game_for(i)[1] in held_out[game_for(i)[0]]["test"] for i in test)
    assert all(game_for(i)[1] in held_out[game_for(i)[0]]["dev"] for i in validation)
    assert {SciWorldEnv.stratum(i) for i in test} == {n for n, _ in games()}
    assert {SciWorldEnv.stratum(i) for i in validation} == {n for n, _ in games()}
    assert len(test) == len(validation) == 200


def test_expert_scores_100_and_the_episode_reward_is_score_over_100():
    env = make_env("sciworld")
    try:
        played = play_expert(env, "3165", max_turns=60)  # find-living-thing
        assert game_for("3165")[0] == "find-living-thing"
        assert played.first_observation.startswith("Your task is to find")
        assert "This room is called" in played.first_observation
        assert played.success and env.score == 100
        assert played.reward == pytest.approx(1.0)
        assert all(t.result.valid for t in played.turns)
    finally:
        env.close()


def test_invalid_action_and_failed_task():
    env = make_env("sciworld")
    try:
        env.reset("0")  # boil water
        unknown = env.step("fly to the moon")
        assert not unknown.valid and not unknown.done and unknown.reward == 0
        wrong = env.step("focus on air")  # focusing on the wrong thing fails
        assert wrong.done and not wrong.success
        assert env.score == -100 and wrong.reward == 0  # clipped at 0
        assert not env.running
    finally:
        env.close()


def test_agentgym_routes():
    with TestClient(create_app("sciworld")) as http:
        sid = http.post("/create").json()["id"]
        first = http.post("/reset", json={"id": sid, "data_idx": 30}).json()
        assert first["task_name"] == "melt" and first["var_num"] == 0
        assert first["task_description"].startswith("Your task is to melt")
        assert {"observation", "reward", "score", "deleted", "done"} <= set(first)
        step = http.post("/step", json={"id": sid, "action": "look around"}).json()
        assert set(step) == {"observation", "reward", "score", "done"}
        hint = http.get("/action_hint", params={"id": sid}).json()
        assert "open OBJ" in hint["possible_actions"]
        assert "goals" in http.get("/goals", params={"id": sid}).json()
        assert http.post("/close", json={"id": sid}).json() is True
        late = http.post("/step", json={"id": sid, "action": "look around"})
        assert late.status_code == 200 and "error" in late.json()


def _tree_rss_mb(pid: int) -> float:
    """RSS of ``pid`` and all its descendants, in MiB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    return total


@pytest.mark.slow
def test_soak_500_sessions_keep_memory_flat():
    started = POOL.started
    with TestClient(create_app("sciworld")) as http:

        def cycle(i: int) -> None:
            sid = http.post("/create").json()["id"]
            reset = http.post("/reset", json={"id": sid, "data_idx": (i * 37) % 4639})
            assert "error" not in reset.json()
            assert http.post("/close", json={"id": sid}).json() is True

        for i in range(3):
            cycle(i)
        assert POOL.started - started <= 1  # closed sessions gave their JVM back
        for i in range(3, 100):  # warm-up: the JVM's heap and JIT settle
            cycle(i)
        before = _tree_rss_mb(os.getpid())
        for i in range(100, 600):
            cycle(i)
        after = _tree_rss_mb(os.getpid())
    print(f"RSS after warm-up {before:.0f} MiB, after 500 cycles {after:.0f} MiB")
    assert abs(after - before) <= 0.10 * before
    # one JVM for all 600 sessions, plus the fresh ones that replace a JVM each
    # time it reaches its load budget (how many depends on its loads so far)
    assert POOL.started - started <= 1 + 600 // POOL.recycle_after


def test_pool_recycles_a_simulator_after_its_load_budget():
    pool = SimulatorPool(max_idle=2, recycle_after=2)
    simulator = pool.lease()
    simulator.load("boil", 0)
    pool.release(simulator)
    assert pool.lease() is simulator  # reused
    simulator.load("boil", 1)
    pool.release(simulator)  # two loads: shut down, not kept
    assert pool.pids() == []
    assert simulator._env._gateway.java_process.poll() is not None


def test_agentgym_client_plays_sciworld_on_our_server(serve):
    local = make_env("sciworld")
    try:
        expert = play_expert(local, "3461", max_turns=30)  # find-non-living-thing
    finally:
        local.close()
    server = serve("sciworld")
    with RemoteEnv(server.url, protocol="agentgym", env="sciworld") as remote:
        played = replay(remote, "3461", expert.actions)
    assert played.success and played.reward == pytest.approx(1.0)
    assert played.first_observation == expert.first_observation
    assert [t.result for t in played.turns] == [
        Step(t.result.observation, t.result.reward, t.result.done, t.result.success)
        for t in expert.turns
    ]


def test_a_game_reads_the_same_whatever_the_jvm_did_before():
    # Without a fixed hash order, room contents come out in an order that
    # depends on the JVM's history (found with "3461": its cups of paint).
    fresh, used = SimulatorPool(max_idle=0), SimulatorPool(max_idle=0)
    task, variation = game_for("3461")
    with used.leased() as simulator:
        for game in ((task, variation), ("melt", 0), (task, variation)):
            simulator.load(*game)
            after_history = simulator.step("look around").observation
    with fresh.leased() as simulator:
        simulator.load(task, variation)
        assert simulator.step("look around").observation == after_history

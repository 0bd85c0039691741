from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from evoflow.envs import EnvError, TaskError, make_env, play_expert, replay
from evoflow.envs.textcraft import TextCraftEnv, goal_list, goals
from evoflow.envs.textcraft_recipes import build_book, default_book, recipe_dir

CRAFTING_TABLE = "178"  # goal 178 (crafting table, depth 2), distractor variant 0
GOALS = 551


def test_scripted_actions_give_exact_observations():
    # Prepare
    env = make_env("textcraft")

    # Execute
    first = env.reset(CRAFTING_TABLE)
    actions = [
        "inventory",
        "get 1 oak log",
        "craft 4 oak planks using 1 oak log",
        "Inventory",
        "craft 1 crafting table using 4 oak planks.",
    ]
    steps = [env.step(a) for a in actions]

    # Assert
    assert first == (
        "Crafting commands:\n"
        "craft 1 chest using 8 oak planks\n"
        "craft 1 wooden pickaxe using 2 stick, 3 oak planks\n"
        "craft 1 light gray bed using 3 light gray wool, 3 oak planks\n"
        "craft 1 green bed using 3 green wool, 3 oak planks\n"
        "craft 1 pink bed using 3 pink wool, 3 oak planks\n"
        "craft 1 shield using 6 oak planks, 1 iron ingot\n"
        "craft 1 note block using 8 oak planks, 1 redstone\n"
        "craft 4 oak planks using 1 oak log\n"
        "craft 1 gray bed using 3 gray wool, 3 oak planks\n"
        "craft 1 beehive using 6 oak planks, 3 honeycomb\n"
        "craft 4 oak stairs using 6 oak planks\n"
        "craft 1 crafting table using 4 oak planks\n"
        "\n"
        "Goal: craft crafting table."
    )
    assert env.goal == "crafting table" and env.depth == 2
    assert [s.observation for s in steps] == [
        "Inventory: you are not carrying anything.",
        "Got 1 oak log",
        "Crafted 4 oak planks",
        "Inventory: [oak planks] (4)",
        "Crafted 1 crafting table",
    ]
    assert [s.done for s in steps] == [False] * 4 + [True]
    assert (steps[-1].reward, steps[-1].success) == (1.0, True)
    assert env.inventory == {"crafting table": 1}
    with pytest.raises(EnvError, match="no running episode"):
        env.step("inventory")


def test_batches_and_wrong_amounts():
    env = make_env("textcraft")
    env.reset(CRAFTING_TABLE)
    env.step("get 3 oak log")

    wrong = env.step("craft 2 oak planks using 1 oak log")
    odd = env.step("craft 8 oak planks using 1 oak log")
    batch = env.step("craft 8 oak planks using 2 oak log")

    expected = (
        "Wrong amounts for oak planks. One batch is 'craft 4 oak planks using 1 oak "
        "log'; multiply every amount by the same whole number."
    )
    assert wrong.observation == odd.observation == expected
    assert not wrong.valid and not odd.valid
    assert batch.valid and batch.observation == "Crafted 8 oak planks"
    assert env.inventory == {"oak log": 1, "oak planks": 8}


def test_crafting_without_ingredients_is_refused():
    env = make_env("textcraft")
    env.reset(CRAFTING_TABLE)
    env.step("get 1 oak log")

    result = env.step("craft 8 oak planks using 2 oak log")

    assert (
        result.observation
        == "Cannot craft 8 oak planks: you need 2 oak log (you have 1)."
    )
    assert (result.valid, result.done, result.reward) == (False, False, 0.0)
    assert env.inventory == {"oak log": 1}


def test_get_is_only_for_known_base_items():
    env = make_env("textcraft")
    env.reset(CRAFTING_TABLE)

    craftable = env.step("get 4 oak planks")
    unknown = env.step("get 1 unobtainium")
    zero = env.step("get 0 oak log")
    wrong_recipe = env.step("craft 1 crafting table using 4 oak log")
    garbage = env.step("dance")

    assert (
        craftable.observation
        == "Cannot get oak planks: it is not a base item; craft it."
    )
    assert unknown.observation == "Unknown item: unobtainium."
    assert zero.observation == "You can get between 1 and 999 items at a time."
    assert wrong_recipe.observation == "No recipe makes crafting table from 4 oak log."
    assert garbage.observation.startswith("'dance' is not a valid action")
    assert not any(s.valid for s in (craftable, unknown, zero, wrong_recipe, garbage))
    assert env.inventory == {}


def test_tags_resolve_to_one_member():
    book = default_book()
    # '#minecraft:planks' -> the shallowest, shortest member id
    assert (
        book.canonical["crafting_table"].command
        == "craft 1 crafting table using 4 oak planks"
    )
    # '#minecraft:oak_logs' has no group members: its singular item stands in
    assert book.canonical["oak_planks"].command == "craft 4 oak planks using 1 oak log"
    # '#minecraft:logs' and '#minecraft:coals'
    assert (
        book.canonical["campfire"].command
        == "craft 1 campfire using 3 oak log, 3 stick, 1 coal"
    )
    # a tag without members is itself a base item
    assert book.is_base("stone_tool_materials")
    # loops are cut at unpacking first: nugget -> ingot -> block is kept (Minecraft's
    # 9-to-1 packing recipes), block -> 9 ingots and ingot -> 9 nuggets are not
    assert book.is_base("iron_nugget")
    assert (
        book.canonical["iron_ingot"].command == "craft 1 iron ingot using 9 iron nugget"
    )
    assert (
        book.canonical["iron_block"].command == "craft 1 iron block using 9 iron ingot"
    )
    assert (book.depth["iron_ingot"], book.depth["iron_block"]) == (1, 2)
    # ... and at cutting: slabs from sandstone only (not from chiseled sandstone,
    # itself made of two slabs)
    assert book.recipes["sandstone_slab"][0].command == (
        "craft 6 sandstone slab using 3 sandstone"
    )
    assert len(book.recipes["sandstone_slab"]) == 1
    # ... and at a recipe that yields more than it takes of the looping ingredient:
    # 4 honey bottles from a honey block and 4 glass bottles
    assert book.is_base("honey_bottle")
    assert book.canonical["honey_block"].command == (
        "craft 1 honey block using 4 honey bottle"
    )


def test_goal_list_does_not_depend_on_file_order():
    paths = sorted(recipe_dir().glob("*.json"))

    forward = goal_list(build_book(paths))
    backward = goal_list(build_book(reversed(paths)))

    assert forward == backward == goals()
    assert [(g.depth, g.item) for g in forward] == sorted(
        (g.depth, g.item) for g in forward
    )


def test_test_split_covers_depths_and_never_shares_a_goal_with_train():
    env = make_env("textcraft")
    listed = goals()
    test, train = env.task_ids("test"), env.task_ids("train")
    validation = env.task_ids("validation")

    depths = Counter(listed[int(i) % GOALS].depth for i in test)
    held_out = Counter(listed[int(i) % GOALS].depth for i in validation)
    test_goals = {int(i) % GOALS for i in test}
    validation_goals = {int(i) % GOALS for i in validation}
    train_goals = {int(i) % GOALS for i in train}

    # AgentGym-RL's test set: 31 / 41 / 25 / 3 tasks of depth 1 / 2 / 3 / 4;
    # validation: that mix scaled to 40 of depth 1, at variant 0.
    assert len(listed) == GOALS
    assert depths == {1: 31, 2: 41, 3: 25, 4: 3}
    assert held_out == {1: 40, 2: 53, 3: 32, 4: 4}
    assert all(int(i) < GOALS for i in test + validation)
    assert len(test_goals) == 100 and len(validation_goals) == 129
    assert not test_goals & train_goals
    assert not validation_goals & (test_goals | train_goals)
    assert len(train) == 2 * len(train_goals) == 2 * (len(listed) - 100 - 129)


def test_distractor_variants_change_only_the_distractors():
    env = make_env("textcraft")
    first = set(env.reset(CRAFTING_TABLE).splitlines())
    second = set(env.reset(str(int(CRAFTING_TABLE) + GOALS)).splitlines())
    assert "craft 1 crafting table using 4 oak planks" in first & second
    assert first != second
    assert len(env.commands) <= 2 + 10


def test_expert_solves_test_split_fast_and_replays():
    env = make_env("textcraft")
    ids = env.task_ids("test")

    start = time.perf_counter()
    played = [play_expert(env, i) for i in ids]
    elapsed = time.perf_counter() - start

    assert all(t.success and len(t.turns) <= 20 for t in played)
    assert elapsed < 10
    sample = played[-1]
    again = replay(make_env("textcraft"), ids[-1], sample.actions)
    assert [t.result for t in again.turns] == [t.result for t in sample.turns]


def test_expert_recovers_from_a_detour():
    env = make_env("textcraft")
    env.reset(CRAFTING_TABLE)
    env.step("get 5 oak log")
    env.step("craft 4 oak planks using 1 oak log")

    thought, action = env.expert_action()

    assert action == "craft 1 crafting table using 4 oak planks"
    assert "goal" in thought


def test_unknown_task_and_step_before_reset():
    env = make_env("textcraft")
    with pytest.raises(EnvError, match="reset"):
        env.step("inventory")
    with pytest.raises(EnvError, match="no task"):
        _ = env.goal
    with pytest.raises(TaskError, match="no task with id '999999'"):
        env.reset("999999")
    with pytest.raises(TaskError, match="not an integer"):
        env.reset("abc")


def test_tag_names_agentgym_shows_stand_for_their_items():
    # AgentGym keeps a tag that no recipe makes a member of as an item of its own
    # ("craft 4 jungle planks using 1 jungle logs"); here a tag reads as the
    # member item its recipes resolve to (test_tags_resolve_to_one_member).
    env = make_env("textcraft")
    env.reset(CRAFTING_TABLE)

    got = [
        env.step(f"get {n}").observation for n in ("1 jungle logs", "4 logs", "1 coals")
    ]
    crafted = env.step("craft 4 jungle planks using 1 jungle logs")
    crafted_only = [env.step(f"get 1 {tag}").observation for tag in ("planks", "wool")]

    assert got == ["Got 1 jungle log", "Got 4 oak log", "Got 1 coal"]
    assert crafted.observation == "Crafted 4 jungle planks" and crafted.valid
    assert crafted_only == [
        f"Cannot get {item}: it is not a base item; craft it."
        for item in ("oak planks", "white wool")
    ]
    assert env.inventory == {"oak log": 4, "coal": 1, "jungle planks": 4}


def test_a_tag_name_a_custom_task_uses_stays_its_own_item():
    env = make_env("textcraft")
    env.reset_custom("craft 4 jungle planks using 1 jungle logs", "jungle planks")
    assert env.step("get 1 jungle logs").observation == "Got 1 jungle logs"
    assert env.step("craft 4 jungle planks using 1 jungle logs").success


def test_custom_task_shows_its_commands_and_can_use_them():
    # Prepare
    env = make_env("textcraft")
    commands = (
        "craft 1 iron ingot using 9 iron nugget\ncraft 1 bucket using 3 iron ingot"
    )

    # Execute
    first = env.reset_custom(commands, "bucket")
    refused = env.step("get 3 iron ingot")
    env.step("get 27 iron nugget")
    crafted = env.step("craft 3 iron ingot using 27 iron nugget")
    done = env.step("craft 1 bucket using 3 iron ingot")

    # Assert
    assert first == f"Crafting commands:\n{commands}\n\nGoal: craft bucket."
    assert env.commands == commands.splitlines() and env.goal == "bucket"
    assert not refused.valid and crafted.valid
    assert done.success and done.reward == 1.0


@pytest.mark.parametrize(
    ("commands", "goal", "named"),
    [
        ("craft 4 oak planks using 1 oak log", "unobtainium", "'unobtainium'"),
        ("make planks from logs", "oak planks", "'make planks from logs'"),
        ("\n \n", "oak planks", "empty"),
    ],
)
def test_custom_task_names_what_is_wrong(commands, goal, named):
    with pytest.raises(ValueError, match=named):
        make_env("textcraft").reset_custom(commands, goal)


def test_listed_actions_are_all_accepted_and_solve_depth_one_goals():
    # Prepare: depth-1 test goals, e.g. one needing 8 of a base item
    env = TextCraftEnv()
    goals = [t for t in env.task_ids("test") if env.stratum(t) == "depth 1"]
    rng = random.Random(0)
    solved = 0

    # Execute: random listed actions; and the shortest listed path per goal
    for task in goals[:40]:
        env.reset(task)
        for _ in range(6):
            step = env.step(rng.choice(env.available_actions()))
            assert step.valid, step.observation
            if step.done:
                break
        env.reset(task)
        step = None
        while step is None or not step.done:
            _, action = env.expert_action()
            assert action in env.available_actions(), (task, action)
            step = env.step(action)
        solved += step.success

    # Assert: the expert's every action was listed, so every goal is reachable
    assert solved == len(goals[:40])

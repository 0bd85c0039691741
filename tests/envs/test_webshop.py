from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from itertools import combinations

import pytest

from evoflow.envs import EnvError, TaskError, make_env, play_expert
from evoflow.envs.webshop.catalog import catalog
from evoflow.envs.webshop.env import purchase_of, wish_of
from evoflow.envs.webshop.expert import Shopper
from evoflow.envs.webshop.goals import (
    MAX_DECOYS,
    decoys_before_complete,
    goal_for,
    goals,
)
from evoflow.envs.webshop.reward import (
    Purchase,
    Wish,
    reward,
    title_nouns,
    token_set_ratio,
    type_reward,
)
from evoflow.envs.webshop.search import Bm25Index, search_products
from evoflow.envs.webshop.taxonomy import OPTION_VALUES, product_types

SEP = " [SEP] "
INSTRUCTION_0 = (
    "please get me a slim design, scratch resistant and anti fingerprint car phone "
    "mount; i prefer for galaxy s24 and pink color, and price lower than 25.00 dollars"
)
QUERY_0 = (
    "slim design scratch resistant anti fingerprint car phone mount galaxy s24 pink"
)
SLIM = "Anti Fingerprint Slim Design Scratch Resistant"
EDGES = "Slim Design Raised Edges Scratch Resistant Bubble Free"
TITLE_0 = f"Creststone {SLIM} Car Phone Mount"
ITEM_0 = [
    "Back to Search", "< Prev", "device", "galaxy s24", "moto g", "color", "white",
    "navy", "red", "green", "grey", "pink", "beige", "purple", "yellow", "orange",
    "brown", TITLE_0, "Price: $14.65", "Rating: 4.5",
]  # fmt: skip
DIGEST_CODE = (
    "import hashlib; from evoflow.envs.webshop.catalog import catalog; "
    "from evoflow.envs.webshop.goals import goals; "
    "print(hashlib.sha256(repr((catalog().products, goals())).encode()).hexdigest())"
)


def _observations(task: str, actions: list[str]):
    env = make_env("webshop")
    first = env.reset(task)
    return env, first, [env.step(a) for a in actions]


# --- catalog -------------------------------------------------------------------


def test_catalog_size_categories_and_shape():
    products = catalog().products
    assert len(products) >= 2000
    assert len({p.path[0] for p in products}) >= 10
    assert len({p.asin for p in products}) == len(products)
    for p in products:
        assert len(p.path) == 3 and p.path[-1] == p.product_type
        assert p.asin.startswith("B0") and len(p.asin) == 10
        assert p.attributes and p.options and p.bullets and p.description
        assert all(len(values) >= 2 for _, values in p.options)
    near = sum(p.role.startswith("near-miss") for p in products) / len(products)
    assert 0.5 < near < 0.75


def test_value_pools_never_fuzzy_match_each_other():
    for values in OPTION_VALUES.values():
        assert all(token_set_ratio(a, b) <= 85 for a, b in combinations(values, 2))
    for kind in product_types():
        assert len(kind.option_kinds) <= 2  # the 10-turn budget in goals.py
        for a, b in combinations(kind.attributes, 2):
            assert token_set_ratio(a, b) <= 85 and a not in b and b not in a


def test_catalog_is_the_same_in_every_process():
    # Prepare
    here = hashlib.sha256(repr((catalog().products, goals())).encode()).hexdigest()

    # Execute
    digests = {
        subprocess.run(
            [sys.executable, "-c", DIGEST_CODE],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for seed in ("0", "1", "12345")
    }  # fmt: skip

    # Assert
    assert digests == {here}


def test_near_misses_fail_in_exactly_one_respect():
    by_asin = catalog().by_asin
    for goal in catalog().goals[:500]:
        wish = wish_of(goal)
        for asin in (goal.asin, *goal.near_misses):
            product = by_asin[asin]
            chosen = {k: v for k, v in goal.options if product.offers(v)}
            score = reward(wish, purchase_of(product, chosen))
            total = len(goal.attributes) + len(goal.options) + 1
            want = 1.0 if asin == goal.asin else (total - 1) / total
            assert score == pytest.approx(want), (goal.family, product.role)


def test_instructions_quote_every_requirement():
    for goal in goals():
        text = goal.instruction
        assert goal.product_type in text
        assert all(a in text for a in goal.attributes)
        assert all(v in text for _, v in goal.options)
        assert text.endswith(f", and price lower than {goal.price_upper:.2f} dollars")
        assert decoys_before_complete(goal) <= MAX_DECOYS


def test_splits_and_task_ids():
    env = make_env("webshop")
    assert env.task_ids("test") == [str(i) for i in range(200)]
    assert len(env.task_ids("train")) >= 2000
    assert goal_for("0").instruction == INSTRUCTION_0
    for bad in ["0007", "-1", "abc", " 3", str(len(goals())), "٣"]:
        with pytest.raises(TaskError):
            env.reset(bad)
    with pytest.raises(EnvError, match="reset"):
        env.step("search[x]")


# --- pages ---------------------------------------------------------------------


def test_scripted_episode_gives_exact_observations():
    # Prepare
    actions = [
        f"search[{QUERY_0}]",
        "click[B0PFGN9KE1]",
        "click[pink]",
        "click[buy now]",
    ]

    # Execute
    env, first, steps = _observations("0", actions)

    # Assert
    head = ["Instruction:", INSTRUCTION_0]
    mount = "Car Phone Mount"
    fingerprint = "Anti Fingerprint"
    rows = [
        ("B0PFGN9KE1", TITLE_0, "$14.65"),
        ("B02KC49JZ1", f"Sunford {SLIM} {mount}", "$26.37"),
        ("B0J7LDDKW9", f"Ironlight {fingerprint} Lifetime Warranty Scratch Resistant "
         f"{mount}", "$15.77"),
        ("B09YJLHLU5", f"Sunridge {EDGES} {mount}", "$19.98"),
        ("B0NX12W1C9", f"Kindford {SLIM} {mount}", "$16.51"),
        ("B0ZLA3HN9L", f"Everlight {fingerprint} Shockproof Scratch Resistant {mount}",
         "$15.33"),
        ("B0YXVKSAFL", f"Bluevale Scratch Resistant {fingerprint} Easy Install {mount}",
         "$31.56"),
        ("B0FVEDGVCC", f"Crestfield Scratch Resistant {fingerprint} Easy Install "
         f"{mount}", "$52.09"),
        ("B0T4K1PHNB", f"Amberworks {EDGES} {mount}", "$17.76"),
        ("B086VR1DD3", f"Sunworks Kickstand Magnetic {fingerprint} Shockproof {mount}",
         "$31.59"),
    ]  # fmt: skip
    results = ["Back to Search", "Page 1 (Total results: 50)", "Next >"]
    results += [part for row in rows for part in row]
    tail = ["Description", "Features", "Buy Now"]
    assert first == SEP.join(["WebShop", *head, "Search"])
    assert steps[0].observation == SEP.join(head + results)
    assert steps[1].observation == SEP.join(
        head + ITEM_0 + ["Selected options: none"] + tail
    )
    assert steps[2].observation == SEP.join(
        head + ITEM_0 + ["Selected options: color: pink"] + tail
    )
    assert steps[3].observation == SEP.join(
        ["Thank you for shopping with us!", *head, "You bought:", "B0PFGN9KE1", TITLE_0,
         "Price: $14.65", "Selected options: color: pink", "Score: 0.83 out of 1.00"]
    )  # fmt: skip
    # Device left unselected: (3 attributes + 1 option + price) / (3 + 2 + 1).
    assert steps[3].reward == pytest.approx(5 / 6)
    assert [(s.done, s.success, s.valid) for s in steps] == [
        (False, False, True), (False, False, True), (False, False, True),
        (True, False, True),
    ]  # fmt: skip
    assert not env.running and env.page_actions() == (False, [])


def test_page_actions_and_tabs():
    env = make_env("webshop")
    env.reset("0")
    assert env.page_actions() == (True, [])
    assert env.available_actions() == ["search[<your query>]"]
    env.step(f"search[{QUERY_0}]")
    has_search, clickables = env.page_actions()
    assert not has_search and clickables[:2] == ["back to search", "next >"]
    assert clickables[2] == "b0pfgn9ke1" and len(clickables) == 12
    env.step("click[b0pfgn9ke1]")
    assert env.page_actions()[1][-3:] == ["description", "features", "buy now"]
    description = env.step("click[description]").observation
    assert description.startswith(
        SEP.join(["Instruction:", INSTRUCTION_0, "Back to Search"])
    )
    assert description.endswith(
        "< Prev [SEP] This car phone mount by Creststone is anti fingerprint, slim "
        "design and scratch resistant. Available device: galaxy s24 and moto g. "
        "Available color: white, navy, red, green, grey, pink, beige, purple, yellow, "
        "orange and brown. It makes a practical addition to any home."
    )
    assert env.available_actions() == ["click[back to search]", "click[< prev]"]
    env.step("click[< prev]")
    features = env.step("click[features]").observation
    assert (
        "resistant: made for daily use. [SEP] Device choices: galaxy s24 and moto g."
        in features
    )
    assert env.step("click[< prev]").observation.endswith("Buy Now")
    results = SEP.join(["Instruction:", INSTRUCTION_0, "Back to Search", "Page 1"])
    assert env.step("click[< prev]").observation.startswith(results)
    assert env.step("click[back to search]").observation.endswith("[SEP] Search")


def test_pagination_walks_all_five_pages():
    # Prepare
    env = make_env("webshop")
    env.reset("0")
    page_one = env.step(f"search[{QUERY_0}]").observation

    # Execute
    pages = [env.step("click[next >]").observation for _ in range(4)]
    beyond = env.step("click[next >]")
    back = [env.step("click[< prev]").observation for _ in range(4)]

    # Assert
    assert [p.split(SEP)[3] for p in pages] == [
        f"Page {n} (Total results: 50)" for n in range(2, 6)
    ]
    assert "< Prev [SEP] Next >" in pages[0] and "Next >" not in pages[-1]
    assert not beyond.valid and beyond.observation.endswith(pages[-1])
    assert back[-1] == page_one and back[0] == pages[2]
    assert "click[< prev]" not in env.available_actions()


def test_invalid_actions_keep_the_page():
    env = make_env("webshop")
    first = env.reset("0")
    cases = ["click[buy now]", "search[]", "search[   ]", "buy it", "click[b0pfgn9ke1]"]
    for action in cases:
        result = env.step(action)
        assert not result.valid and not result.done
        assert result.observation.startswith("Invalid action: ")
        assert result.observation.endswith(first)
    env.step(f"search[{QUERY_0}]")
    for action in [
        f"search[{QUERY_0}]",
        "click[pink]",
        "click[< prev]",
        "click[b0xxxxxxxx]",
    ]:
        assert not env.step(action).valid
    assert env.step("click[ B0PFGN9KE1 ]").valid  # case and spaces are forgiven
    assert env.step("Click [Pink]").valid


def test_option_near_miss_of_task_0_lacks_the_device():
    # Prepare: B0NX12W1C9 has the target's title words but no galaxy s24 option
    env = make_env("webshop")
    env.reset("0")
    env.step(f"search[{QUERY_0}]")

    # Execute
    item = env.step("click[b0nx12w1c9]").observation
    buttons = env.available_actions()
    env.step("click[pink]")
    result = env.step("click[buy now]")

    # Assert
    assert "device [SEP] pixel 8 [SEP] moto g [SEP] color" in item
    assert "click[moto g]" in buttons and "click[galaxy s24]" not in buttons
    assert result.reward == pytest.approx(5 / 6) and not result.success


def test_unselected_options_still_buy():
    env = make_env("webshop")
    env.reset("0")
    env.step(f"search[{QUERY_0}]")
    env.step("click[b0pfgn9ke1]")
    result = env.step("click[buy now]")
    assert result.done and not result.success
    assert result.reward == pytest.approx(4 / 6)


# --- reward ----------------------------------------------------------------------

WISH = Wish(
    product_type="lip balm",
    path=("beauty", "lip care", "lip balm"),
    title="Brightvale Long Lasting Vegan Lip Balm",
    attributes=("long lasting", "vegan"),
    options=("vanilla", "pack of three"),
    price_upper=20.0,
)


def _bought(**changes) -> Purchase:
    fields = {
        "product_type": "lip balm",
        "path": ("beauty", "lip care", "lip balm"),
        "title": "Sunwick Long Lasting Vegan Tinted Lip Balm",
        "attributes": ("long lasting", "vegan", "tinted"),
        "text": "Sunwick Long Lasting Vegan Tinted Lip Balm",
        "price": 12.5,
        "selected": ("vanilla", "pack of three"),
    }
    return Purchase(**{**fields, **changes})


def test_reward_cases_by_hand():
    assert reward(WISH, _bought()) == 1.0
    # one wrong option: (2 attributes + 1 option + price) / (2 + 2 + 1)
    assert reward(WISH, _bought(selected=("cherry", "pack of three"))) == pytest.approx(
        4 / 5
    )
    assert reward(WISH, _bought(selected=())) == pytest.approx(3 / 5)
    assert reward(WISH, _bought(price=20.01)) == pytest.approx(4 / 5)
    assert reward(WISH, _bought(price=20.0)) == 1.0
    # attribute missing from the list but named in the text still counts
    text_only = _bought(attributes=("long lasting",), text="A vegan balm.")
    assert reward(WISH, text_only) == 1.0
    plain = "Sunwick Long Lasting Lip Balm"
    no_vegan = _bought(attributes=("long lasting",), title=plain, text=plain)
    assert reward(WISH, no_vegan) == pytest.approx(4 / 5)
    # wrong product type: no shared noun with the goal title -> r_type 0
    mouse = _bought(
        product_type="wireless mouse",
        path=("electronics", "computer accessories", "wireless mouse"),
        title="Ironford Long Lasting Vegan Wireless Mouse",
    )
    assert title_nouns(mouse.title) == {"ironford", "wireless", "mouse"}
    assert reward(WISH, mouse) == 0.0


def test_type_reward_levels():
    wish = Wish("lip balm", ("beauty", "lip care", "lip balm"),
                "Brightvale Lip Balm Tin Pouch Kit", (), (), 10.0)  # fmt: skip
    assert title_nouns(wish.title) == {
        "brightvale",
        "lip",
        "balm",
        "tin",
        "pouch",
        "kit",
    }
    other = ("office", "paper", "notebook")
    # 1 of 6 nouns shared (between 0.1 and 0.2), other category: 0.5
    assert (
        type_reward(
            wish, _bought(product_type="notebook", path=other, title="Oakline Kit")
        )
        == 0.5
    )
    # same category path levels (beauty, lip care) count as the same kind
    gloss = _bought(
        product_type="lip gloss",
        path=("beauty", "lip care", "lip gloss"),
        title="Oakline Kit",
    )
    assert type_reward(wish, gloss) == 1.0
    # 2 of 6 shared nouns (> 0.2): 1
    assert (
        type_reward(wish, _bought(product_type="notebook", path=other, title="Lip Kit"))
        == 1.0
    )


def test_token_set_ratio_matches_webshop_quirks():
    assert (
        token_set_ratio("large", "extra large") == 100
    )  # one side's words within the other's
    assert token_set_ratio("pack of 2", "pack of 3") > 85  # why pools spell numbers out
    assert token_set_ratio("pack of two", "pack of three") <= 85
    assert token_set_ratio("Gluten-Free", "gluten free") == 100
    assert token_set_ratio("", "vanilla") == 0


# --- search ----------------------------------------------------------------------


def test_bm25_by_hand():
    index = Bm25Index.build(["red apple", "green apple pie pie", "banana"])
    assert index.search("apple pie") == [1, 0]
    assert index.search("kiwi") == []
    # idf(pie) = ln(1 + (3 - 1 + 0.5) / 1.5); avgdl = 7 / 3; |d1| = 4; tf = 2
    idf_pie = 0.9808292530117262
    norm = 0.9 * (1 - 0.4 + 0.4 * 4 / (7 / 3))
    idf_apple = 0.4700036292457356  # ln(1 + 1.5 / 2.5)
    want = idf_pie * 2 * 1.9 / (2 + norm) + idf_apple * 1.9 / (1 + norm)
    assert index.scores("apple pie")[1] == pytest.approx(want)


def test_bm25_ranks_an_exact_title_first():
    products = catalog().products
    counts: dict[str, int] = {}
    for p in products:
        counts[p.title] = counts.get(p.title, 0) + 1
    unique = [p for p in products if counts[p.title] == 1][::97][:20]
    assert len(unique) == 20
    for product in unique:
        assert search_products(product.title)[0] == product.asin


# --- expert ----------------------------------------------------------------------


def test_expert_demonstration_on_task_0():
    trajectory = play_expert(make_env("webshop"), "0")
    assert trajectory.actions == [
        f"search[{QUERY_0}]", "click[b0pfgn9ke1]", "click[galaxy s24]", "click[pink]",
        "click[buy now]",
    ]  # fmt: skip
    assert trajectory.success and trajectory.reward == 1.0
    assert all(t.thought for t in trajectory.turns)


def test_expert_leaves_a_near_miss_unless_turns_run_out():
    # Prepare: the option near-miss of task 0 (no galaxy s24)
    env = make_env("webshop")
    env.reset("0")
    env.step(f"search[{QUERY_0}]")
    env.step("click[b0nx12w1c9]")

    # Execute
    roomy = Shopper(goal_for("0")).act(env.page, turns_left=8)
    tight = Shopper(goal_for("0")).act(env.page, turns_left=3)

    # Assert
    assert roomy[1] == "click[< prev]" and "'galaxy s24'" in roomy[0]
    assert tight[1] == "click[pink]"


@pytest.mark.slow
def test_expert_solves_every_test_task_quickly():
    env = make_env("webshop")
    env.reset("0")  # build catalog and index outside the timing
    start = time.perf_counter()
    played = [play_expert(env, task) for task in env.task_ids("test")]
    elapsed = time.perf_counter() - start
    assert [t.task_id for t in played if not t.success] == []
    assert max(len(t.turns) for t in played) <= 10
    assert elapsed < 30

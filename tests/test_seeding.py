"""Seeded draws: stratified subsets keep each stratum's share (hand-worked)."""

from collections import Counter

from evoflow.envs.babyai import BabyAIEnv
from evoflow.envs.textcraft import TextCraftEnv
from evoflow.evaluate.run import eval_tasks
from evoflow.seeding import choose_stratified

ITEMS = ["a1", "b1", "a2", "c1", "a3", "b2", "a4"]


def by_letter(item: str) -> str:
    return item[0]


def test_largest_remainder_allocation():
    # shares of 3: a 12/7 = 1.71, b 6/7 = 0.86, c 3/7 = 0.43 -> floors 1, 0, 0;
    # the two left over go to b (0.86) and then a (0.71).
    picked = choose_stratified(ITEMS, 3, by_letter, 0)
    assert Counter(map(by_letter, picked)) == {"a": 2, "b": 1}
    assert picked == [i for i in ITEMS if i in picked]  # original order kept


def test_whole_split_and_seed_stability():
    assert choose_stratified(ITEMS, None, by_letter, 0) == ITEMS
    assert choose_stratified(ITEMS, 9, by_letter, 0) == ITEMS
    assert choose_stratified(ITEMS, 4, by_letter, 1) == choose_stratified(
        ITEMS, 4, by_letter, 1
    )


def test_eval_subsets_follow_the_splits_mix():
    # TextCraft's test split is 31/41/25/3 goals of depth 1/2/3/4: 10 of them
    # keep 3/4/3/0 (remainders .1/.1/.5/.3: depth 3 gets the one left over).
    depths = Counter(TextCraftEnv.stratum(t) for t in eval_tasks("textcraft", 10, 0))
    assert depths == {"depth 1": 3, "depth 2": 4, "depth 3": 3}
    # BabyAI's 90 test ids: 32 goto, 22 mixed, 12 unlock, 10 open, 10 pickup,
    # 4 putnext; 9 of them: 3.2, 2.2, 1.2, 1, 1, 0.4 -> 3, 2, 1, 1, 1, +1 putnext.
    families = Counter(BabyAIEnv.stratum(t) for t in eval_tasks("babyai", 9, 0))
    assert families == {"goto": 3, "mixed": 2, "unlock": 1, "open": 1, "pickup": 1,
                        "putnext": 1}  # fmt: skip

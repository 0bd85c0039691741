"""One SAGE step with scripted role replies and the real verifiers: rewards
against hand-worked values, the plan gate, what may enter the pool, and
Alg. 1's two phases (difficulty measured without a plan; the Planner and
Solver work on problems drawn from the pool)."""

from __future__ import annotations

import random

import pytest

from evoflow.policy.base import Generation
from evoflow.sage.pool import seeded
from evoflow.sage.problems import Problem, code_problem
from evoflow.sage.roles import ROLES
from evoflow.sage.span import asker
from evoflow.sage.step import Checker, SageSettings, run_step
from evoflow.verify import MathVerifier

QUESTION = "<question>Lea has 2 cats and gets 3 more. How many cats?</question>"
# seed problems whose key is 5, like QUESTION's: whichever the pool gives the
# Planner and Solver, the scripted answers 5 and 4 are right and wrong
FIVES = [Problem(f"five-{i}", "math", f"What is {i} + {5 - i}?", "5") for i in range(3)]


@pytest.fixture(scope="module")
def checker():
    with MathVerifier(seconds=10) as maths:
        yield Checker(maths)


def scripted(challenger: str, question_score: int, plan_score: int, solver=None):
    """Replies by role; the Solver alternates a right and a wrong answer (or
    ``solver``: its replies, or a function of the chat)."""
    prompts: dict[str, list] = {}

    def ask(role, chats, purpose=None):
        prompts.setdefault(role, []).extend(chats)
        if role == "challenger":
            texts = [challenger] * len(chats)
        elif role == "planner":
            texts = ["<plan>1. add the cats</plan>"] * len(chats)
        elif role == "critic":
            plan = "Plan:" in chats[0][0]["content"]
            score = plan_score if plan else question_score
            texts = [f"<score>{score}</score>"] * len(chats)
        elif callable(solver):
            texts = [solver(chat) for chat in chats]
        else:
            texts = solver or ["<answer>5</answer>", "<answer>4</answer>"] * len(chats)
        return [Generation(t, 1, 1) for t in texts[: len(chats)]]

    return ask, prompts


def step(ask, checker, pool=None, **settings):
    pool = pool or seeded(FIVES)
    settings = {"questions": 1, **settings}
    result = run_step(1, pool, ask, checker, SageSettings(**settings),
                      random.Random(0))  # fmt: skip
    return result, pool


def rewards(result, role):
    return [c.reward for c in result.calls if c.role == role]


def test_a_valid_question_scored_8_joins_the_pool_with_hand_worked_rewards(checker):
    ask, prompts = scripted(QUESTION + "<answer>5</answer><type>math</type>", 8, 7)
    result, pool = step(ask, checker)
    s_q, s_p = 7 / 9, 6 / 9  # Norm(8), Norm(7) on the 1-10 scale
    # two of four difficulty samples right: r_d = 0.5; every format complete
    assert rewards(result, "challenger") == pytest.approx([(s_q + 0.5 + 1) / 3])
    assert rewards(result, "planner") == pytest.approx([0.5 * s_p + 0.5])
    right, wrong = 0.2 * s_p + 0.6 + 0.2, 0.2 * s_p + 0.2
    assert rewards(result, "solver") == pytest.approx([right, wrong, right, wrong])
    assert rewards(result, "critic") == [1.0, 1.0]
    assert len(pool) == 4 and result.offers["accepted"] == 1
    entry = pool.entries[-1]
    assert (entry.problem.answer, entry.step, entry.solve_rate) == ("5", 1, 0.5)
    # the difficulty samples were on the new question, without its plan
    probes = prompts["solver"][:4]
    assert all("Lea has 2 cats" in chat[0]["content"] for chat in probes)
    assert not any("add the cats" in chat[0]["content"] for chat in probes)


def test_a_question_scored_7_stays_out_and_the_reward_drops_difficulty(checker):
    ask, _ = scripted(QUESTION + "<answer>5</answer><type>math</type>", 7, 7)
    result, pool = step(ask, checker)
    assert rewards(result, "challenger") == pytest.approx([(6 / 9 + 1) / 2])
    assert len(pool) == 3 and result.offers["rejected"] == 1


@pytest.mark.parametrize(("plan_score", "shown"), [(3, False), (4, True)])
def test_the_solver_sees_the_plan_only_from_the_gate_up(checker, plan_score, shown):
    # beta = 0.3: Norm(3) = 0.222 hides the plan, Norm(4) = 0.333 shows it
    ask, prompts = scripted(
        QUESTION + "<answer>5</answer><type>math</type>", 9, plan_score
    )
    result, _ = step(ask, checker)
    seen = ["add the cats" in chat[0]["content"] for chat in prompts["solver"]]
    assert seen == [False] * 4 + [shown] * 4  # difficulty samples, then Plan–Solve
    s_p = (plan_score - 1) / 9
    right = 0.2 * (s_p if shown else 0.0) + 0.6 + 0.2
    assert rewards(result, "solver")[0] == pytest.approx(right)


def test_a_code_question_whose_reference_fails_its_tests_never_enters(checker):
    pool = seeded([code_problem(0, i) for i in range(2)])
    good = ("<question>Write add(a, b).</question><tests>assert add(1, 2) == 3\n"
            "assert add(0, 0) == 0</tests><answer>def add(a, b):\n    return a + b"
            "</answer><type>code</type>")  # fmt: skip
    bad = good.replace("return a + b", "return a - b")
    solver = ["<answer>def add(a, b):\n    return a + b</answer>"] * 4
    ask, _ = scripted(bad, 10, 9, solver)
    result, pool = step(ask, checker, pool)
    assert len(pool) == 2 and result.offers == {
        "accepted": 0,
        "rejected": 0,
        "duplicate": 0,
    }
    assert "pool" not in result.calls[0].info  # invalid: never offered
    ask, _ = scripted(good, 10, 9, solver)
    result, pool = step(ask, checker, pool)
    assert (
        len(pool) == 3 and pool.entries[-1].problem.tests[0] == "assert add(1, 2) == 3"
    )
    assert pool.entries[-1].solve_rate == 1.0  # r_d = 0 for a question all solve
    assert rewards(result, "challenger") == pytest.approx([(1 + 0 + 1) / 3])


def test_a_repeated_question_is_refused_and_a_missing_one_scores_zero(checker):
    ask, _ = scripted(QUESTION + "<answer>5</answer><type>math</type>", 9, 9)
    result, pool = step(ask, checker)
    result, pool = step(ask, checker, pool)
    assert result.offers["duplicate"] == 1 and len(pool) == 4
    # a repeat does not join the pool: paid like a refused question (Eq. 6)
    assert rewards(result, "challenger") == pytest.approx([(8 / 9 + 1) / 2])
    ask, prompts = scripted("I would rather not.", 9, 9)
    result, pool = step(ask, checker, pool)
    # no <question>: nothing for the Critic to rate (s_q = 0), r_f = 0
    assert rewards(result, "challenger") == [0.0]
    assert "critic" not in {
        c.role for c in result.calls if c.info.get("about") == "question"
    }
    # the Solver works on a problem from the pool
    assert any(
        e.problem.question in prompts["solver"][0][0]["content"] for e in pool.entries
    )


def test_planning_off_pays_the_solver_half_correctness_half_format(checker):
    ask, prompts = scripted(QUESTION + "<answer>5</answer><type>math</type>", 9, 9)
    result, _ = step(ask, checker, planning=False)
    assert "planner" not in prompts
    assert rewards(result, "solver") == pytest.approx([1.0, 0.5, 1.0, 0.5])


def test_a_wrong_answer_key_is_paid_as_the_hardest_question(checker):
    # The known self-play failure mode (SPEC-wave2 §3.7): the Challenger's answer
    # is wrong (2 + 3 = 6), every right Solver answer (5) is marked wrong, so
    # r_d = 1 and the question enters the pool with its wrong key.
    wrong = QUESTION + "<answer>6</answer><type>math</type>"
    ask, _ = scripted(wrong, 9, 9, ["<answer>5</answer>"] * 4)
    result, pool = step(ask, checker)
    assert rewards(result, "challenger") == pytest.approx([(8 / 9 + 1 + 1) / 3])
    assert pool.entries[-1].problem.answer == "6" and pool.entries[-1].solve_rate == 0.0


def test_requiring_a_solved_sample_keeps_a_wrong_key_out(checker):
    wrong = QUESTION + "<answer>6</answer><type>math</type>"
    ask, _ = scripted(wrong, 9, 9, ["<answer>5</answer>"] * 4)
    result, pool = step(ask, checker, require_solved=True)
    assert len(pool) == 3 and result.offers["rejected"] == 1
    # kept out, so not paid r_d = 1 for its wrong key
    assert rewards(result, "challenger") == pytest.approx([(8 / 9 + 1) / 2])
    right = QUESTION + "<answer>5</answer><type>math</type>"
    ask, _ = scripted(right, 9, 9)  # two of four samples agree with the key
    result, pool = step(ask, checker, require_solved=True)
    assert len(pool) == 4 and result.offers["accepted"] == 1


def test_difficulty_is_measured_without_the_plan(checker):
    # The Solver is right only when shown the plan: the plan-free difficulty
    # samples all miss (r_d = 1) while the Plan–Solve answers all hit.
    def solver(chat):
        return (
            "<answer>5</answer>"
            if "add the cats" in chat[0]["content"]
            else "<answer>4</answer>"
        )

    ask, _ = scripted(QUESTION + "<answer>5</answer><type>math</type>", 9, 9, solver)
    result, pool = step(ask, checker)
    assert rewards(result, "challenger") == pytest.approx([(8 / 9 + 1 + 1) / 3])
    assert pool.entries[-1].solve_rate == 0.0
    assert all(c.info["correct"] == 1.0 for c in result.calls if c.role == "solver")


@pytest.mark.parametrize(("question_score", "joins"), [(7, False), (9, True)])
def test_planner_and_solver_work_on_problems_drawn_from_the_pool(checker, question_score,
                                                                 joins):  # fmt: skip
    ask, prompts = scripted(
        QUESTION + "<answer>5</answer><type>math</type>", question_score, 9
    )
    pool = seeded(FIVES[:1])
    result, pool = step(ask, checker, pool, questions=6)
    ids = {e.problem.id for e in pool.entries}
    assert len(ids) == (2 if joins else 1)
    worked = {c.item for c in result.calls if c.role in ("planner", "solver")}
    assert worked <= ids
    # a question the Critic refused is never planned or solved in its step
    on_new = ["Lea has 2 cats" in chat[0]["content"] for chat in prompts["planner"]]
    assert any(on_new) == joins and not all(on_new)


@pytest.mark.parametrize(("question_score", "high"), [(7, 0), (9, 3)])
def test_a_steps_metrics_count_the_critics_acceptances_and_the_pool(checker,
                                                                   question_score,
                                                                   high):  # fmt: skip
    # three tagged questions (one the same text, one whose answer
    # is empty) and one with no <question>: the Critic rates three
    replies = iter([QUESTION + "<answer>5</answer>", QUESTION + "<answer>5</answer>",
                    QUESTION.replace("2 cats", "4 cats") + "<answer></answer>",
                    "no question"])  # fmt: skip

    def ask(role, chats, purpose=None):
        if role == "challenger":
            return [Generation(next(replies), 1, 1) for _ in chats]
        return scripted("", question_score, 9)[0](role, chats, purpose)

    result, pool = step(ask, checker, questions=4, planning=False)
    m = result.metrics
    assert (m["questions"], m["rated"], m["critic_accepted"]) == (4, 3, high)
    assert m["critic_acceptance_rate"] == high / 4
    joined = 1 if high else 0  # the repeat is a duplicate, no answer: invalid
    assert (m["joined"], m["join_rate"], m["pool_size"]) == (joined, joined / 4,
                                                            3 + joined)  # fmt: skip
    assert m["offers"] == {"accepted": joined, "rejected": 0 if high else 2,
                           "duplicate": 1 if high else 0}  # fmt: skip
    # the step's verification time is reported: its share of the checker's
    # running total (the checker serves every test of this module)
    assert 0 < m["verify_seconds"] <= checker.seconds


def test_without_the_challenge_phase_no_question_is_asked_and_the_targets_match():
    # the control: no Challenger, question Critic or difficulty call; the
    # Solver answers the problems the full step draws from an unchanged pool
    # (here the Critic scores 7, below alpha, so the full step's pool stays too)
    seeds = [
        Problem(f"p{i}", "math", f"What is {i} + 1?", str(i + 1)) for i in range(6)
    ]
    asked = {}
    for challenge in (True, False):
        ask, prompts = scripted(QUESTION + "<answer>5</answer>", 7, 9,
                                solver=lambda chat: "<answer>1</answer>")  # fmt: skip
        with MathVerifier(seconds=10) as maths:
            result, pool = step(ask, Checker(maths), seeded(seeds), questions=3,
                                planning=False, challenge=challenge)  # fmt: skip
        asked[challenge] = prompts
        assert len(pool) == 6
    full, control = asked[True], asked[False]
    assert set(control) == {"solver"} and {"challenger", "critic"} <= set(full)
    # full: 3 difficulty probes x 4 samples, then 3 targets x 4; control: the targets
    assert len(full["solver"]) == 24 and full["solver"][12:] == control["solver"]
    m = result.metrics
    assert (m["questions"], m["joined"], m["pool_size"]) == (0, 0, 6)
    assert m["offers"] == {"accepted": 0, "rejected": 0, "duplicate": 0}


class _Recording:
    """A policy stand-in for ``asker``: the scripted replies of ``scripted``
    (told apart by the role's adapter folder), every call's prompts and seeds."""

    def __init__(self, script):
        self.script, self.calls = script, []

    def generate(self, chats, params, adapter=None, seeds=None, **_):
        self.calls.append((adapter, chats, seeds))
        return self.script(adapter, chats)


def test_the_control_samples_its_solver_answers_with_the_full_steps_seeds():
    # seeds are keyed by the call's purpose: with an unchanged pool (the Critic
    # scores 7, below alpha) the control's Solver gets the same prompts AND the
    # same seeds as the full step's Plan-Solve call, so its training chain is
    # the full step's, not a reshuffled one (before, the n-th Solver call of a
    # step was seeded by n, and the control's first call was the full step's
    # second)
    problems = [
        Problem(f"p{i}", "math", f"What is {i} + 1?", str(i + 1)) for i in range(6)
    ]
    solver_calls = {}
    for challenge in (True, False):
        ask, _ = scripted(QUESTION + "<answer>5</answer>", 7, 9,
                          solver=lambda chat: "<answer>1</answer>")  # fmt: skip
        policy = _Recording(ask)
        with MathVerifier(seconds=10) as maths:
            step(asker(policy, {r: r for r in ROLES}, 3, 1, 8), Checker(maths),
                 seeded(problems), questions=3, planning=False, challenge=challenge)  # fmt: skip
        solver_calls[challenge] = [(c, s) for a, c, s in policy.calls if a == "solver"]
    full, control = solver_calls[True], solver_calls[False]
    assert len(full) == 2 and len(control) == 1  # difficulty, then Plan-Solve
    assert full[1] == control[0]
    assert full[0][1] != full[1][1]  # the difficulty probe has seeds of its own


def test_the_step_audits_the_keys_of_admitted_questions_in_a_level_zero_shape(checker):
    # three questions join (Critic 9): one in a level-0 shape with the right key
    # (3 + 2 = 5), one in that shape with a wrong key (7), one in no such shape;
    # a fourth, in the shape with a right key, is rejected (a repeat), so it
    # is not counted
    right = "<question>Zara has 3 hats and finds 2 more. How many?</question><answer>5</answer>"
    replies = iter([right, right.replace("3 hats", "4 hats").replace(">5<", ">7<"),
                    "<question>What is 6 times 1?</question><answer>6</answer>",
                    right])  # fmt: skip

    def ask(role, chats, purpose=None):
        if role == "challenger":
            return [Generation(next(replies), 1, 1) for _ in chats]
        return scripted("", 9, 9)[0](role, chats, purpose)

    result, pool = step(ask, checker, questions=4, planning=False)
    m = result.metrics
    assert m["joined"] == 3 and m["offers"]["duplicate"] == 1
    assert (m["joined_in_template"], m["template_keys_right"]) == (2, 1)

"""One SAGE step (seed 001, Alg. 1) over any policy, every reward traced.

Challenge phase, for each of ``questions`` Challenger calls: draw reference
problems from the pool → the Challenger proposes a question and its verifier
→ the Critic scores the question (s_q) → the verifier checks it (a math
answer parses; a code question's reference solution passes all its tests) →
the Solver answers a valid question ``solver_samples`` times without a plan,
and the verified share gives its difficulty r_d → the question joins the pool
when s_q ≥ α, it is valid and new (and, with ``require_solved``, some sample
matched its key); only a question that joined is paid with r_d (Eq. 5), any
other with s_q and format (Eq. 6).

Plan–Solve phase (Alg. 1 l. 16), once per Challenger call: a problem is drawn
from the pool as it now stands (of the reference's kind) → the Planner plans
and the Critic scores the plan (s_p) → the Solver answers ``solver_samples``
times, shown the plan only when s_p ≥ β → the verifier scores each answer.
The difficulty samples only measure r_d; the Solver is trained on the
Plan–Solve answers. A question with no ``<question>`` tag has nothing to
rate: s_q = 0. Calls of one role are batched across questions, so a backend
generates them together.

With ``challenge`` off the Challenge phase is skipped: the references are still
drawn (so the Plan-Solve targets are the ones the full step would draw from an
unchanged pool), nothing is proposed and the pool never grows: the Solver's RL
on the seed pool alone, the control that isolates what the Challenger adds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from evoflow.policy.base import Generation
from evoflow.sage import rewards as R
from evoflow.sage import roles
from evoflow.sage.pool import Entry, Pool
from evoflow.sage.problems import Problem, template_answer
from evoflow.sandbox import Limits
from evoflow.verify.code import UnsplittableTest, check_code, code_helpers
from evoflow.verify.maths import MathVerifier

# role, chats, purpose -> replies. The purpose names the call within a step
# (PURPOSES), so a backend can seed it by what it is for, not by its order.
Ask = Callable[[str, list[roles.Chat], str], list[Generation]]
PURPOSES = ("propose", "rate_question", "difficulty", "plan", "rate_plan", "solve")


@dataclass(frozen=True)
class SageSettings:
    questions: int = 4  # Challenger calls per step
    references: int = 1  # pool problems shown to the Challenger (not stated)
    solver_samples: int = 4  # N_s (not stated in the paper)
    planning: bool = True  # off: the Solver never gets a plan, r_s = (s_gt + r_f) / 2
    weights: R.Weights = field(default_factory=R.Weights)
    norm: str = "fixed"  # see evoflow.sage.rewards
    # Accept only questions some Solver sample answered as the key says: a
    # guard against wrong answer keys (paid as the hardest questions); off in
    # the paper.
    require_solved: bool = False
    # Off: no Challenge phase (no Challenger, question Critic or difficulty
    # call), so the pool stays the seed pool and each step is the Plan-Solve
    # phase alone on the same draws: the "w/o Challenger" control.
    challenge: bool = True

    def __post_init__(self) -> None:
        for name in ("questions", "references", "solver_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"sage.{name} must be >= 1, got {getattr(self, name)}")
        R.norm(None, self.norm)  # names the bad value


@dataclass
class Call:
    """One role reply and its reward; ``item`` is the question it served."""

    role: str
    chat: roles.Chat
    generation: Generation
    item: str
    reward: float = 0.0
    info: dict = field(default_factory=dict)


@dataclass
class StepResult:
    calls: list[Call]
    offers: dict[str, int]  # OFFERS -> count
    metrics: dict


class Checker:
    """The verifiers: is a proposal checkable, and is an answer right?
    ``seconds`` adds up the time spent verifying (maths and code)."""

    def __init__(self, maths: MathVerifier, limits: Limits | None = None) -> None:
        self.maths = maths
        self.limits = limits
        self.seconds = 0.0

    def valid(self, proposal: roles.Proposal) -> bool:
        if proposal.kind == "math":
            return bool(proposal.answer) and self.maths.parses(proposal.answer)
        if not proposal.tests or not proposal.answer:
            return False
        return self._code(proposal.answer, proposal.tests, "") == 1.0

    def correct(self, problem: Problem, answer: str) -> float:
        if not answer.strip():
            return 0.0
        if problem.kind == "math":
            clock = time.perf_counter()
            try:
                return float(self.maths.check(problem.answer, answer).correct)
            finally:
                self.seconds += time.perf_counter() - clock
        # a benchmark's prompt holds the helpers its tests call (HumanEval)
        ours = problem.source in ("generated", "challenger")
        return self._code(
            answer, problem.tests, "" if ours else code_helpers(problem.question)
        )

    def _code(self, program: str, tests, helpers: str) -> float:
        """Pass rate of ``program``; 0 where a test cannot be split into
        inputs and expected values (``evoflow.verify.cases``)."""
        clock = time.perf_counter()
        try:
            return check_code(
                program, list(tests), self.limits, helpers=helpers
            ).pass_rate
        except UnsplittableTest:
            return 0.0
        finally:
            self.seconds += time.perf_counter() - clock


def run_step(step: int, pool: Pool, ask: Ask, checker: Checker,
             settings: SageSettings, rng) -> StepResult:  # fmt: skip
    """Play one SAGE step, add accepted questions to ``pool`` (in place)."""
    times: dict[str, float] = {}
    timed = _timer(ask, times)
    verified = checker.seconds
    references = [_references(pool, rng, settings) for _ in range(settings.questions)]
    challenges = (_challenge(step, references, timed, checker, settings)
                  if settings.challenge else [])  # fmt: skip
    _difficulty(challenges, timed, checker, settings)
    calls, offers = [], dict.fromkeys(("accepted", "rejected", "duplicate"), 0)
    for c, refs in zip(challenges, references, strict=settings.challenge):
        joined = False
        if c["valid"]:
            rate = c["call"].info["solve_rate"]
            entry = Entry(c["problem"], step, refs[0].problem.id, c["score"], rate)
            accept = R.accepted(c["score"], True, settings.weights)
            solved = c["call"].info["solved"]  # some sample fully verified
            accept = accept and (solved or not settings.require_solved)
            status = pool.offer(entry, accept)
            offers[status] += 1
            c["call"].info["pool"] = status
            joined = status == "accepted"
        c["call"].reward = R.challenger(c["score"], c["call"].info.get("difficulty", 0.0),
                                        c["format"], joined)  # fmt: skip
        calls += [c["call"], *c["critics"]]
    targets = [
        pool.sample(rng, 1, refs[0].problem.kind)[0].problem for refs in references
    ]
    plans = _plan(targets, timed, settings)
    solves = _solve(targets, plans, timed, checker, settings)
    for plan, answers in zip(plans, solves, strict=True):
        calls += [*plan, *answers]
    metrics = _metrics(calls, offers, pool, times)
    metrics |= _acceptance(challenges, offers, settings)
    metrics |= _key_audit(challenges, checker)
    metrics["verify_seconds"] = round(checker.seconds - verified, 3)
    return StepResult(calls, offers, metrics)


def _acceptance(challenges: list[dict], offers: dict, settings) -> dict:
    """The step's questions: how many the Critic rated, how many it scored at
    or above alpha (an untagged question has s_q = 0) and how many joined the
    pool (valid, new, and accepted), with both rates over the questions asked."""
    asked = len(challenges)
    rated = sum(c["proposal"] is not None for c in challenges)
    high = sum(
        c["proposal"] is not None and c["score"] >= settings.weights.alpha
        for c in challenges
    )
    return {
        "questions": asked,
        "rated": rated,
        "critic_accepted": high,
        "critic_acceptance_rate": high / max(asked, 1),
        "joined": offers["accepted"],
        "join_rate": offers["accepted"] / max(asked, 1),
    }


def _key_audit(challenges: list[dict], checker: Checker) -> dict:
    """Of the maths questions that joined the pool, those in a level-0 shape
    (``template_answer``: an answer known without solving) and, of these, those
    whose key the verifier finds equal to that answer. A measurement only: the
    loop admits a question whatever its key (as the paper does, unless
    ``require_solved``)."""
    shaped = right = 0
    for c in challenges:
        problem = c["problem"]
        if c["call"].info.get("pool") != "accepted" or problem.kind != "math":
            continue
        expected = template_answer(problem.question)
        if expected is None:
            continue
        shaped += 1
        right += (
            checker.correct(replace(problem, answer=str(expected)), problem.answer)
            == 1.0
        )
    return {"joined_in_template": shaped, "template_keys_right": right}


def _difficulty(challenges: list[dict], ask: Ask, checker: Checker, settings) -> None:
    """r_d of every valid question (Alg. 1 l. 8-9): the Solver answers it
    ``solver_samples`` times with no plan; the verified share is its solve
    rate (kept in the Challenger call's info with r_d)."""
    valid = [c for c in challenges if c["valid"]]
    n = settings.solver_samples
    chats = [roles.solver_chat(c["problem"], None) for c in valid for _ in range(n)]
    replies = ask("solver", chats, "difficulty")
    for i, c in enumerate(valid):
        problem = c["problem"]
        solved = [checker.correct(problem, roles.solver_answer(r.text, problem.kind))
                  for r in replies[i * n : (i + 1) * n]]  # fmt: skip
        c["call"].info |= {
            "solve_rate": sum(solved) / n,
            "difficulty": R.difficulty(solved),
            "solved": any(s == 1.0 for s in solved),
        }


def _timer(ask: Ask, times: dict[str, float]) -> Ask:
    def timed(role: str, chats: list[roles.Chat], purpose: str) -> list[Generation]:
        if purpose not in PURPOSES:
            raise ValueError(f"{role}: unknown call purpose {purpose!r}")
        clock = time.perf_counter()
        replies = ask(role, chats, purpose) if chats else []
        if len(replies) != len(chats):
            raise ValueError(f"{role}: {len(replies)} replies for {len(chats)} prompts")
        times[role] = times.get(role, 0.0) + time.perf_counter() - clock
        return replies

    return timed


def _references(pool: Pool, rng, settings: SageSettings) -> list[Entry]:
    first = pool.sample(rng, 1)[0]
    return [first, *pool.sample(rng, settings.references - 1, first.problem.kind)]


def _challenge(step, references, ask: Ask, checker: Checker, settings) -> list[dict]:
    chats = [roles.challenger_chat([e.problem for e in refs]) for refs in references]
    replies = ask("challenger", chats, "propose")
    found = []
    for i, (refs, chat, reply) in enumerate(
        zip(references, chats, replies, strict=True)
    ):
        kind = refs[0].problem.kind
        proposal = roles.proposal(reply.text, kind)
        valid = proposal is not None and checker.valid(proposal)
        item = f"step{step}-q{i}"
        found.append({
            "call": Call("challenger", chat, reply, item),
            "proposal": proposal, "valid": valid, "score": 0.0, "critics": [],
            "format": R.format_score(reply.text, roles.tags("challenger", kind)),
            "problem": _problem(item, proposal, refs[0].problem) if valid else None,
        })  # fmt: skip
    rated = [c for c in found if c["proposal"] is not None]
    chats = [roles.critic_question_chat(c["proposal"].question) for c in rated]
    for c, chat, reply in zip(
        rated, chats, ask("critic", chats, "rate_question"), strict=True
    ):
        c["score"] = R.norm(R.parse_score(reply.text), settings.norm)
        c["critics"] = [
            _critic_call(chat, reply, c["call"].item, "question", c["score"])
        ]
        c["call"].info["question_score"] = c["score"]
    return found


def _problem(item: str, proposal: roles.Proposal, parent: Problem) -> Problem:
    code = proposal.kind == "code"
    return Problem(
        id=item, kind=proposal.kind, question=proposal.question,
        answer="" if code else proposal.answer, tests=proposal.tests,
        solution=proposal.answer if code else "", level=parent.level + 1,
        source="challenger",
    )  # fmt: skip


def _critic_call(chat, reply: Generation, item: str, about: str, score) -> Call:
    reward = R.critic(R.format_score(reply.text, roles.tags("critic", "math")))
    return Call("critic", chat, reply, item, reward, {"about": about, "score": score})


def _plan(targets: list[Problem], ask: Ask, settings: SageSettings) -> list[list[Call]]:
    """Per target: [planner call, critic call], or [] with planning off."""
    if not settings.planning:
        return [[] for _ in targets]
    chats = [roles.planner_chat(t.question) for t in targets]
    replies = ask("planner", chats, "plan")
    texts = [roles.tag(r.text, "plan") or "" for r in replies]
    critic_chats = [
        roles.critic_plan_chat(t.question, p)
        for t, p in zip(targets, texts, strict=True)
    ]
    verdicts = ask("critic", critic_chats, "rate_plan")
    plans = []
    for t, chat, reply, text, critic_chat, verdict in zip(
        targets, chats, replies, texts, critic_chats, verdicts, strict=True
    ):
        score = R.norm(R.parse_score(verdict.text), settings.norm) if text else 0.0
        form = R.format_score(reply.text, roles.tags("planner", t.kind))
        call = Call("planner", chat, reply, t.id, R.planner(score, form, settings.weights),
                    {"plan_score": score, "plan": text})  # fmt: skip
        plans.append([call, _critic_call(critic_chat, verdict, t.id, "plan", score)])
    return plans


def _solve(targets, plans, ask: Ask, checker: Checker, settings) -> list[list[Call]]:
    chats, meta = [], []
    for t, plan in zip(targets, plans, strict=True):
        score = plan[0].info["plan_score"] if plan else None
        shown = score is not None and R.plan_shown(score, settings.weights)
        chat = roles.solver_chat(t, plan[0].info["plan"] if shown else None)
        chats += [chat] * settings.solver_samples
        meta += [(t, score, shown)] * settings.solver_samples
    replies = ask("solver", chats, "solve")
    calls = []
    for chat, reply, (t, score, shown) in zip(chats, replies, meta, strict=True):
        correct = checker.correct(t, roles.solver_answer(reply.text, t.kind))
        form = R.format_score(reply.text, roles.tags("solver", t.kind))
        reward = R.solver(correct, form, score, settings.weights)
        calls.append(Call("solver", chat, reply, t.id, reward,
                          {"correct": correct, "plan_shown": shown}))  # fmt: skip
    n = settings.solver_samples
    return [calls[i : i + n] for i in range(0, len(calls), n)]


def _metrics(calls: list[Call], offers: dict, pool: Pool, times: dict) -> dict:
    by_role: dict[str, list[float]] = {}
    for call in calls:
        by_role.setdefault(call.role, []).append(call.reward)
    solver = [c for c in calls if c.role == "solver"]
    challenger = [c for c in calls if c.role == "challenger"]
    return {
        "reward": {role: sum(v) / len(v) for role, v in by_role.items()},
        "solver_accuracy": sum(c.info["correct"] for c in solver) / max(len(solver), 1),
        "plan_shown": sum(c.info["plan_shown"] for c in solver) / max(len(solver), 1),
        "valid_questions": sum("pool" in c.info for c in challenger),
        "offers": offers,
        "pool_size": len(pool),
        "seconds": times,
    }

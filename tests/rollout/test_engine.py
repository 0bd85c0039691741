from __future__ import annotations

import pytest

from evoflow.envs import make_env
from evoflow.policy.base import (
    ActionChoice,
    Generation,
    Policy,
    PolicyError,
    SamplingParams,
)
from evoflow.rollout.engine import RolloutSpec, rollout
from tests.rollout.scripted import ScriptedPolicy


def spec(**overrides) -> RolloutSpec:
    values = dict(
        experiment="t", method="m", split="test", source="eval", client="c", width=4
    )
    values.update(overrides)
    return RolloutSpec(**values)


@pytest.mark.parametrize(
    "env_name", ["maze", "wordle", "textcraft", "webshop", "babyai"]
)
def test_replaying_the_expert_through_the_engine_always_succeeds(env_name):
    # Prepare
    tasks = make_env(env_name).task_ids("test")[:6]
    policy = ScriptedPolicy(env_name, tasks)

    # Execute
    episodes = rollout(
        policy, lambda: make_env(env_name), tasks, spec(), progress=False
    )

    # Assert
    assert [e.task_id for e in episodes] == tasks
    assert all(e.success and e.termination == "done" for e in episodes)
    first = episodes[0]
    assert [m.role for m in first.messages[:3]] == ["system", "user", "assistant"]
    assert all(m.loss is (m.role == "assistant") for m in first.messages)
    assert first.n_turns == sum(m.role == "assistant" for m in first.messages)
    assert first.n_tokens == 10 * first.n_turns


class Babbler(Policy):
    """Never produces an action."""

    model_id = "babbler"
    max_context = 10_000

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        return [Generation("I am not sure what to do.", 50, 7) for _ in chats]


def test_horizon_cuts_episodes_with_max_turns():
    episodes = rollout(
        Babbler(), lambda: make_env("maze"), ["0", "1"], spec(horizon=3), progress=False
    )
    assert [(e.n_turns, e.termination, e.success) for e in episodes] == [
        (3, "max_turns", False)
    ] * 2
    assert "could not be used: no 'Action:' line" in episodes[0].messages[3].content


def test_invalid_streak_ends_episodes_when_asked():
    episodes = rollout(
        Babbler(), lambda: make_env("maze"), ["0"], spec(max_invalid=2), progress=False
    )
    assert episodes[0].termination == "invalid" and episodes[0].n_turns == 2


def test_samples_and_width_cover_every_task():
    tasks = make_env("maze").task_ids("test")[:5]
    policy = ScriptedPolicy("maze", tasks)
    episodes = rollout(
        policy,
        lambda: make_env("maze"),
        tasks,
        spec(samples=3, width=4),
        progress=False,
    )
    assert [(e.task_id, e.episode_id.rsplit("/", 1)[1]) for e in episodes] == [
        (t, str(k)) for t in tasks for k in range(3)
    ]


def test_a_backend_error_is_retried_once():
    tasks = ["0"]
    episodes = rollout(ScriptedPolicy("maze", tasks, fail_times=1), lambda: make_env("maze"), tasks,
                       spec(), progress=False)  # fmt: skip
    assert episodes[0].success
    with pytest.raises(
        PolicyError, match="generation failed twice for a batch of 1 chats"
    ):
        rollout(ScriptedPolicy("maze", tasks, fail_times=2), lambda: make_env("maze"), tasks,
                spec(), progress=False)  # fmt: skip


class Tight(Babbler):
    """Says the prompt no longer fits after two turns."""

    def generate(self, chats, params, adapter=None, seeds=None, keys=None):
        return [Generation("", 9_999, 0, "context") if len(c) > 5 else Generation("Action: move up", 10, 3)
                for c in chats]  # fmt: skip


def test_context_overflow_stops_with_context():
    episode = rollout(Tight(), lambda: make_env("maze"), ["0"], spec(), progress=False)[
        0
    ]
    assert episode.termination == "context" and episode.n_turns == 2


def test_overlong_replies_are_invalid_not_crashes():
    class Garbage(Babbler):
        def generate(self, chats, params, adapter=None, seeds=None, keys=None):
            return [
                Generation("Action: " + "\x00" * 100_000, 10, 128, "length")
                for _ in chats
            ]

    episode = rollout(
        Garbage(), lambda: make_env("wordle"), ["0"], spec(horizon=2), progress=False
    )[0]
    assert episode.termination == "max_turns"
    assert "cut off at the length limit" in episode.messages[3].content


def test_sampling_params_are_checked():
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1)


def test_prompts_are_rendered_with_the_reply_formats_template_options(monkeypatch):
    # Prepare: a format that lets the model think, beside the default ReAct
    from evoflow.envs import formats

    thinking = formats.ReAct("react_thinking", "Think, then act.", "Act.",
                             chat_template=(("enable_thinking", True),))  # fmt: skip
    monkeypatch.setitem(formats.REPLY_FORMATS, "react_thinking", thinking)
    seen: list[tuple] = []

    class Recorder(Babbler):
        def generate(self, chats, params, adapter=None, seeds=None, keys=None):
            seen.append(params.template)
            return super().generate(chats, params, adapter, seeds, keys)

    # Execute
    for name in (None, "react_thinking"):
        rollout(Recorder(), lambda: make_env("maze"), ["0"],
                spec(horizon=1, reply_format=name), progress=False)  # fmt: skip

    # Assert
    assert seen == [(("enable_thinking", False),), (("enable_thinking", True),)]


class Recorder(Policy):
    """Records the action choices the engine passes; replies with the first."""

    model_id = "recorder"
    max_context = 10_000

    def __init__(self) -> None:
        self.seen = []

    def generate(self, chats, params, adapter=None, seeds=None, keys=None, **extra):
        choices = extra.get("choices") or [None] * len(chats)
        self.seen += choices
        return [
            Generation(
                f"Thought: go.\nAction: {c.actions[0] if c and c.actions else 'noop'}",
                9,
                3,
            )
            for c in choices
        ]


@pytest.mark.parametrize("env_name", ["maze", "babyai", "textcraft", "wordle"])
def test_constrained_rollouts_pass_each_turns_listed_actions(env_name):
    # Prepare: the same tasks played by hand, to know each turn's listed actions
    task = make_env(env_name).task_ids("test")[0]
    env = make_env(env_name)
    env.reset(task)
    listed = [env.action_choices()]
    policy = Recorder()

    # Execute
    rollout(policy, lambda: make_env(env_name), [task],
            spec(horizon=2, constrain_actions=True), progress=False)  # fmt: skip
    rollout(policy, lambda: make_env(env_name), [task], spec(horizon=1), progress=False)

    # Assert: the first turn was offered exactly the env's list; free rollouts none
    env.step(listed[0][0])
    listed.append(env.action_choices())
    assert [list(c.actions) for c in policy.seen[:2]] == listed
    assert {c.form for c in policy.seen[:2]} == {"react"}
    assert policy.seen[2:] == [None]


def test_the_webshop_search_page_offers_a_search_slot_and_result_pages_are_listed():
    env = make_env("webshop")
    task = env.task_ids("test")[0]
    env.reset(task)
    assert env.action_choices() is None  # the query is free text, in a slot
    assert env.action_slots() == ["search["]
    page = env.step(env.expert_action()[1])
    assert page.valid and env.action_slots() == []
    assert env.action_choices() == [
        a for a in env.available_actions() if a.startswith("click[")
    ]
    policy = Recorder()
    rollout(policy, lambda: make_env("webshop"), [task],
            spec(horizon=1, constrain_actions=True), progress=False)  # fmt: skip
    assert policy.seen == [ActionChoice((), "react", ("search[",))]


def test_the_random_baseline_plays_only_listed_actions_and_sometimes_wins():
    from evoflow.policy.random_choice import RandomChoicePolicy

    tasks = make_env("maze").task_ids("test")[:10]
    episodes = rollout(RandomChoicePolicy(), lambda: make_env("maze"), tasks,
                       spec(constrain_actions=True, width=10), progress=False)  # fmt: skip
    assert all(e.n_invalid == 0 for e in episodes)
    moves = {m.content.split("Action: ")[1] for e in episodes for m in e.messages
             if m.role == "assistant"}  # fmt: skip
    assert moves == {"move up", "move down", "move left", "move right"}
    with pytest.raises(PolicyError, match="listed actions"):
        rollout(RandomChoicePolicy(), lambda: make_env("maze"), tasks[:1], spec(),
                progress=False)  # fmt: skip

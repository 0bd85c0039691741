"""A reference without a model: every reply takes a listed action at random.

``RandomChoicePolicy`` answers each chat with one of its ``ActionChoice``'s
actions, drawn uniformly with the chat's seed, in the chat's reply format. It
measures what chance alone achieves in envs that list their valid actions
(the "Random (valid actions)" row of the results table), so a reader sees what
a trained model adds over it. It needs a choice for every chat: rollouts ask
for one with ``constrain_actions``.
"""

from __future__ import annotations

from evoflow.envs.formats import reply_format
from evoflow.policy.base import Generation, Policy, PolicyError
from evoflow.seeding import py_random

MODEL_ID = "random-valid-actions"
THOUGHT = "I take one of the listed actions at random."


class RandomChoicePolicy(Policy):
    model_id = MODEL_ID
    max_context = 1 << 30

    def generate(
        self, chats, params, adapter=None, seeds=None, keys=None, choices=None
    ):
        if not choices or any(c is None or not c.actions for c in choices):
            raise PolicyError(
                "the random baseline needs the listed actions of every chat "
                "(constrain_actions, in envs that list them)"
            )
        seeds = seeds or [0] * len(chats)
        replies = []
        for choice, seed in zip(choices, seeds, strict=True):
            action = py_random(seed, MODEL_ID).choice(choice.actions)
            text = reply_format(choice.form).render(THOUGHT, action)
            replies.append(Generation(text, 0, 0, "stop"))
        return replies

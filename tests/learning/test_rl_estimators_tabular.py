"""Each advantage estimator, through the same loss code as the LoRA trainer,
drives a tabular policy from chance to the optimum — and a sign-flipped
estimator drives it away.

The game is a contextual bandit with a known optimum: two states, two actions,
reward 1 when the action equals the state. A policy that ignores the state
wins half the time (chance, P(optimal) = 0.5). Each step draws 4 states, plays
8 samples of each (a GRPO/RLOO group), and takes one PPO-clipped step on the
advantages of ``evoflow.train.rl.update.token_advantages`` (one generated
"token" per trajectory; PPO's critic is a value table; GiGPO's anchor state
is the bandit's state).
"""

from __future__ import annotations

import pytest
import torch

from evoflow.train.rl import advantages as rl
from evoflow.train.rl.data import RLBatch
from evoflow.train.rl.update import token_advantages

STATES, SAMPLES, STEPS = 4, 8, 60


def train(estimator: str, sign: float = 1.0, seed: int = 0) -> float:
    """P(optimal action) averaged over states after ``STEPS`` updates."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.zeros(2, 2, requires_grad=True)
    values = torch.zeros(2, requires_grad=True)
    optimizer = torch.optim.Adam([logits, values], lr=0.1)
    for _ in range(STEPS):
        states = torch.randint(0, 2, (STATES,), generator=generator)
        states = states.repeat_interleave(SAMPLES)
        with torch.no_grad():
            probs = torch.softmax(logits[states], -1)
        actions = torch.multinomial(probs, 1, generator=generator)[:, 0]
        rewards = (actions == states).float()
        groups = torch.arange(STATES).repeat_interleave(SAMPLES)
        n = len(states)
        # position 0 is the "prompt", position 1 the one generated action
        batch = RLBatch(
            input_ids=torch.zeros(n, 2, dtype=torch.long),
            attention_mask=torch.ones(n, 2, dtype=torch.long),
            loss_mask=torch.tensor([[0.0, 1.0]]).repeat(n, 1),
            old_logprobs=torch.zeros(n, 2),
            trajectory=torch.arange(n),
        )
        logp = torch.log_softmax(logits[states], -1).gather(1, actions[:, None])
        logp = torch.nn.functional.pad(logp, (1, 0))
        batch.old_logprobs = logp.detach() * batch.loss_mask
        value = torch.nn.functional.pad(values[states][:, None], (1, 0))
        # GiGPO's anchor state of each one-step trajectory: the bandit's state
        anchors = [[int(state)] for state in states]
        advantages, returns = token_advantages(batch, rewards, groups, estimator,
                                               value.detach() * batch.loss_mask,
                                               anchors=anchors)  # fmt: skip
        loss, _ = rl.clipped_policy_loss(
            logp, batch.old_logprobs, sign * advantages, batch.loss_mask
        )
        if returns is not None:
            loss = loss + rl.masked_mean((value - returns) ** 2, batch.loss_mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return float(torch.softmax(logits, -1).diagonal().mean())


@pytest.mark.parametrize("estimator", rl.ESTIMATORS)
def test_each_estimator_learns_the_optimal_action_for_each_state(estimator):
    assert train(estimator) > 0.95  # chance is 0.5


@pytest.mark.parametrize("estimator", rl.ESTIMATORS)
def test_a_sign_flipped_estimator_unlearns(estimator):
    # The same run with the advantages negated must fail the check above.
    assert train(estimator, sign=-1.0) < 0.1

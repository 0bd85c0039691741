"""ε of DP-FedAvg from Google's ``dp_accounting`` RDP accountant, run as its
own process (``python -m evoflow.fed.accountant '<json>'`` prints ε): the
accountant pulls in absl, whose logging keeps the stderr it first sees — in a
long-lived process (a test session, a notebook) that stream may be closed
later, so absl stays out of ours."""

from __future__ import annotations

import json
import logging
import sys

ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + [128, 256, 512]


def rdp_epsilon(noise_multiplier: float, rounds: int, clients: int, sampled: int,
                delta: float) -> float:  # fmt: skip
    """Replace-one neighbours (the sum of clipped updates has sensitivity
    2·clip, so the accountant sees σ/2), m of K clients sampled without
    replacement (no sampling when m = K), ``rounds`` compositions."""
    import dp_accounting
    from dp_accounting import rdp

    logging.getLogger("absl").setLevel(
        logging.ERROR
    )  # orders it cannot bound are skipped
    event = dp_accounting.GaussianDpEvent(noise_multiplier / 2)
    if sampled < clients:
        event = dp_accounting.SampledWithoutReplacementDpEvent(clients, sampled, event)
    relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    accountant = rdp.RdpAccountant(ORDERS, neighboring_relation=relation)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, rounds))
    return float(accountant.get_epsilon(delta))


if __name__ == "__main__":
    sys.stdout.write(json.dumps(rdp_epsilon(**json.loads(sys.argv[1]))) + "\n")

"""A Flower run in one process, without Ray: the ``ServerApp`` drives one
``ClientApp`` per simulated node through a ``Grid`` that delivers each message
by calling the node's app directly.

This file is copied into every sandboxed codebase and imported there as
``flower_runtime`` (the sandbox may read nothing but its own folder, the
standard library and the packages a codebase declares, ``codebase.PACKAGES``),
so it imports only the standard library and ``flwr``.
A generated ``run.py`` calls::

    from flower_runtime import run_federation
    run_federation(server_app, client_app, num_nodes=5, run_config={...})

Like Flower's simulation engine, an exception inside a ``ClientApp`` does not
stop the run: it is logged (``ERROR``, with the traceback) and the server gets
an error reply, which strategies count as a failure ("received N results and
M failures"). The last log line counts the rounds in which some node
answered a training message ("participation: N training replies in R
rounds"), which the diagnosis reads. Node ``k`` sees ``node_config = {"partition-id": k,
"num-partitions": n}`` and keeps its ``Context`` (its state) across rounds.
"""

from __future__ import annotations

import logging
import time
import traceback
import uuid
from collections.abc import Iterable

from flwr.app import Context, Error, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp import Grid, ServerApp
from flwr.supercore.run import Run
from flwr.supercore.task_identity import TaskIdentity

LOG = logging.getLogger("flwr")
CLIENT_APP_ERROR = 1  # flwr's ErrorCode.CLIENT_APP_RAISED_EXCEPTION
RUN_ID = 1


class LocalGrid(Grid):
    """Delivers messages to in-process nodes, one after the other."""

    def __init__(self, client_app: ClientApp, contexts: dict[int, Context]) -> None:
        self._client_app = client_app
        self._contexts = contexts
        self._run = Run.create_empty(run_id=RUN_ID)
        self._replies: dict[str, Message] = {}
        self.messages = 0  # delivered so far
        self.trained: list[int] = []  # training replies per batch of training messages

    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run

    def create_message(self, content: RecordDict, message_type: str,
                       dst_node_id: int, group_id: str,
                       ttl: float | None = None) -> Message:  # fmt: skip
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> Iterable[int]:
        return list(self._contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids, trained, training = [], 0, False
        for message in messages:
            node = message.metadata.dst_node_id
            if node not in self._contexts:
                raise ValueError(f"no node {node} in this federation")
            message_id = str(uuid.uuid4())
            message.metadata.__dict__["_message_id"] = message_id
            message.metadata.__dict__["_run_id"] = self._run.run_id
            message.metadata.__dict__["_src_node_id"] = SUPERLINK_NODE_ID
            reply = self._deliver(message, self._contexts[node])
            if message.metadata.message_type.startswith("train"):
                training, trained = True, trained + (not reply.has_error())
            self._replies[message_id] = reply
            self.messages += 1
            ids.append(message_id)
        if training:
            self.trained.append(trained)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        return [self._replies.pop(i) for i in message_ids if i in self._replies]

    def send_and_receive(self, messages: Iterable[Message], *,
                         timeout: float | None = None) -> Iterable[Message]:  # fmt: skip
        return self.pull_messages(self.push_messages(messages))

    def _deliver(self, message: Message, context: Context) -> Message:
        try:
            return self._client_app(message, context)
        except Exception as error:  # noqa: BLE001 - reported as Flower does
            LOG.error("ClientApp raised an exception on node %s: %r",
                      message.metadata.dst_node_id, error)  # fmt: skip
            LOG.error(traceback.format_exc())
            reason = f"{type(error)}:<'{error}'>"
            return Message(
                Error(code=CLIENT_APP_ERROR, reason=reason), reply_to=message
            )


def run_federation(server_app: ServerApp, client_app: ClientApp, num_nodes: int,
                   run_config: dict | None = None) -> LocalGrid:  # fmt: skip
    """Run ``server_app`` against ``num_nodes`` in-process clients."""
    if num_nodes < 1:
        raise ValueError(f"a federation needs at least one node, got {num_nodes}")
    TaskIdentity.task_id, TaskIdentity.run_id = 1, RUN_ID
    TaskIdentity.node_id = SUPERLINK_NODE_ID
    config = dict(run_config or {})
    contexts = {
        node: Context(run_id=RUN_ID, node_id=node, state=RecordDict(), run_config=config,
                      node_config={"partition-id": node - 1, "num-partitions": num_nodes})
        for node in range(1, num_nodes + 1)
    }  # fmt: skip
    grid = LocalGrid(client_app, contexts)
    server_context = Context(run_id=RUN_ID, node_id=SUPERLINK_NODE_ID, state=RecordDict(),
                             run_config=config, node_config={})  # fmt: skip
    started = time.perf_counter()
    server_app(grid, server_context)
    LOG.info("federation finished in %.2f s, %d messages", time.perf_counter() - started,
             grid.messages)  # fmt: skip
    LOG.info("participation: %d training replies in %d rounds", sum(grid.trained),
             sum(1 for n in grid.trained if n))  # fmt: skip
    return grid

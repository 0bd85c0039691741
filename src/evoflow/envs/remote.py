"""Play an environment that runs in another process: ours or AgentGym's.

``RemoteEnv`` is a ``TextEnv`` whose reset/step are HTTP calls, so rollouts do not
care where an environment lives. Two protocols are spoken: evoflow's ``/v1``
routes, and AgentGym's per-environment routes — the way to use environments
evoflow does not host (SciWorld, ALFWorld, WebArena, the real WebShop).

Retries: a request that never reached the server (connection refused or connect
timeout) is retried with exponential backoff. Resets are repeatable and are also
retried after read errors; a server that forgot the session (it restarted)
gets a new session and the reset is repeated. Steps are not repeatable: a step
that may have reached the server and failed raises ``RemoteError``, which a
rollout records as an episode ending in ``error``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import httpx

from evoflow.envs.base import SPLITS, EnvError, Step, TaskError, TextEnv

log = logging.getLogger(__name__)

CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
TRANSPORT_ERRORS = (httpx.TransportError,)


class RemoteError(EnvError):
    """The environment server failed or could not be reached."""


class SessionLost(RemoteError):
    """The server no longer knows our session (restarted or expired it)."""


# AgentGym route layouts: path prefix, id key, reset key, close route, how a
# finished episode counts as a success.
AGENTGYM_LAYOUTS: dict[str, dict[str, Any]] = {
    "babyai": {"prefix": "", "id": "id", "reset": "data_idx", "close": True, "win": "positive"},
    "sciworld": {"prefix": "", "id": "id", "reset": "data_idx", "close": True, "win": "score"},
    "textcraft": {"prefix": "", "id": "id", "reset": "data_idx", "close": True, "win": "one"},
    "maze": {"prefix": "/maze", "id": "id", "reset": "game", "close": False, "win": "one"},
    "wordle": {"prefix": "/wordle", "id": "id", "reset": "seed", "close": False, "win": "one"},
    "webshop": {"prefix": "", "id": "env_idx", "reset": "session_id", "close": False, "win": "one"},
}  # fmt: skip


class RemoteEnv(TextEnv):
    """A text environment served over HTTP.

    Parameters
    ----------
    url
        server base URL, e.g. ``http://127.0.0.1:8001``.
    protocol
        ``"evoflow"`` (our ``/v1`` routes) or ``"agentgym"``.
    env
        environment name; required for ``agentgym`` (one of ``AGENTGYM_LAYOUTS``).
    client
        a shared ``httpx.Client`` (connection pool); one is created if omitted.
    timeout, retries, backoff
        per-request timeout (s), retries of unsent requests, first retry delay (s).
    system_prompt, max_turns
        override what the server (or, for AgentGym, our env of the same name) says.
    """

    instructions = ""

    def __init__(
        self,
        url: str,
        protocol: str = "evoflow",
        env: str | None = None,
        client: httpx.Client | None = None,
        timeout: float = 30.0,
        retries: int = 5,
        backoff: float = 0.2,
        system_prompt: str | None = None,
        max_turns: int | None = None,
    ) -> None:
        if protocol not in ("evoflow", "agentgym"):
            raise ValueError(f"protocol {protocol!r} is not 'evoflow' or 'agentgym'")
        if protocol == "agentgym" and env not in AGENTGYM_LAYOUTS:
            raise ValueError(
                f"agentgym protocol needs env in {sorted(AGENTGYM_LAYOUTS)}, got {env!r}"
            )
        self.url = url.rstrip("/")
        self.protocol = protocol
        self._owns_client = client is None
        self._client = client or httpx.Client(timeout=timeout)
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._session: int | None = None
        self._score = 0.0  # AgentGym routes: last SciWorld score or BabyAI reward
        info = self._describe(env)
        self.name = info["env"]
        self.max_turns = max_turns or info["max_turns"]
        self._system_prompt = system_prompt or info["system_prompt"]

    # --- TextEnv -----------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    def prompt_for(self, format_name: str) -> str:
        """The server's prompt asks for its own (ReAct) replies; no other format."""
        if format_name != self.reply_format:
            raise EnvError(
                f"remote env {self.name}: its server's prompt asks for "
                f"{self.reply_format!r} replies, not {format_name!r}"
            )
        return self._system_prompt

    @classmethod
    def build_splits(cls) -> dict[str, list[str]]:
        raise NotImplementedError("a remote environment's splits live on its server")

    def task_ids(self, split: str) -> list[str]:
        """A split's ids as our server lists them (``GET /v1/tasks``); AgentGym
        servers list none, so their ids come from the config."""
        if split not in SPLITS:
            raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
        if self.protocol == "agentgym":
            raise EnvError(
                f"{self.url}: AgentGym servers do not list tasks; set "
                f"envs.{self.name}.remote.{split}_ids in the config to the "
                f"{split} task ids (AgentEval item indices)"
            )
        return self._call("GET", "/v1/tasks", params={"split": split}, repeatable=True)[
            "task_ids"
        ]

    def _reset(self, task_id: str) -> str:
        for attempt in range(2):
            if self._session is None:
                self._session = self._create()
            try:
                return self._reset_session(task_id)
            except SessionLost:
                if attempt:
                    raise
                log.info(
                    "reset: %s forgot session %s; opening a new one",
                    self.url,
                    self._session,
                )
                self._session = None
        raise AssertionError("unreachable")

    def _step(self, action: str) -> Step:
        if self.protocol == "evoflow":
            data = self._call(
                "POST", f"/v1/sessions/{self._session}/step", json={"action": action}
            )
            return Step(
                data["observation"], float(data["reward"]), bool(data["done"]),
                bool(data["success"]), bool(data.get("valid", True)),
            )  # fmt: skip
        layout = AGENTGYM_LAYOUTS[self.name]
        body = {layout["id"]: self._session, "action": action}
        data = self._agentgym("POST", "/step", json=body)
        observation = data.get("observation", data.get("state", ""))
        reward, done = float(data.get("reward") or 0.0), bool(data.get("done"))
        if layout["win"] == "score":  # SciWorld: score 0-100 (-100 when failed)
            score = float(data.get("score") or 0.0)
            reward = (max(score, 0.0) - max(self._score, 0.0)) / 100
            self._score, win = score, score >= 100
        elif layout["win"] == "positive":  # BabyAI: the latest action's reward, kept
            reward, self._score, win = reward - self._score, reward, reward > 0
        else:
            win = reward >= 1.0
        return Step(str(observation), reward, done, done and win)

    def expert_action(self) -> tuple[str, str]:
        raise EnvError(f"{self.url}: remote environments have no expert")

    def available_actions(self) -> list[str]:
        if self.protocol == "evoflow" and self._session is not None:
            path = f"/v1/sessions/{self._session}/available_actions"
            return self._call("GET", path, repeatable=True)["actions"]
        return []

    def close(self) -> None:
        """Release the server session (and the HTTP client if we own it)."""
        try:
            if self._session is not None:
                if self.protocol == "evoflow":
                    self._call(
                        "DELETE", f"/v1/sessions/{self._session}", repeatable=True
                    )
                elif AGENTGYM_LAYOUTS[self.name]["close"]:
                    self._agentgym("POST", "/close", json={"id": self._session})
        except (RemoteError, TaskError):
            log.warning(
                "close: %s session %s was already gone", self.url, self._session
            )
        finally:
            self._session = None
            if self._owns_client:
                self._client.close()

    def __enter__(self) -> RemoteEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- protocol details ----------------------------------------------------

    def _describe(self, env: str | None) -> dict[str, Any]:
        if self.protocol == "evoflow":
            return self._call("GET", "/v1/info", repeatable=True)
        from evoflow.envs import REGISTRY, env_class

        if env in REGISTRY:
            local = env_class(env)
            return {
                "env": env,
                "max_turns": local.max_turns,
                "system_prompt": local().system_prompt,
            }
        return {"env": env, "max_turns": 30, "system_prompt": ""}

    def _create(self) -> int:
        if self.protocol == "evoflow":
            return int(self._call("POST", "/v1/sessions", repeatable=False)["id"])
        body = {"commands": None, "goal": None} if self.name == "textcraft" else None
        data = self._agentgym("POST", "/create", json=body, repeatable=False)
        return int(data if isinstance(data, int) else data["id"])

    def _reset_session(self, task_id: str) -> str:
        if self.protocol == "evoflow":
            path = f"/v1/sessions/{self._session}/reset"
            return self._call("POST", path, json={"task_id": task_id}, repeatable=True)[
                "observation"
            ]
        layout = AGENTGYM_LAYOUTS[self.name]
        try:
            index = int(task_id)
        except ValueError:
            raise TaskError(
                f"{self.url}: AgentGym task ids are integers, got {task_id!r}"
            ) from None
        body = {layout["id"]: self._session, layout["reset"]: index}
        data = self._agentgym("POST", "/reset", json=body, repeatable=True)
        if isinstance(data, list):  # WebShop answers [observation, info]
            observation = data[0]
            if observation is None:
                params = {layout["id"]: self._session}
                observation = self._agentgym("GET", "/observation", params=params)
            return str(observation)
        self._score = 0.0
        if "task_description" in data:  # SciWorld states the task apart
            return f"{data['task_description']}\n\n{data['observation']}"
        return str(data["observation"])

    def _agentgym(
        self, method: str, path: str, repeatable: bool = False, **kwargs
    ) -> Any:
        prefix = AGENTGYM_LAYOUTS[self.name]["prefix"]
        data = self._call(method, prefix + path, repeatable=repeatable, **kwargs)
        if isinstance(data, dict) and "error" in data:
            message = str(data["error"])
            if "session" in message.lower() or "id" in message.lower().split():
                raise SessionLost(f"{self.url}: {message}")
            raise EnvError(f"{self.url}: {message}")
        return data

    def _call(self, method: str, path: str, repeatable: bool = False, **kwargs) -> Any:
        """One HTTP request with retries; JSON result or a RemoteError naming it."""
        retry_on = TRANSPORT_ERRORS if repeatable else CONNECT_ERRORS
        delay = self._backoff
        for attempt in range(self._retries + 1):
            try:
                response = self._client.request(
                    method, self.url + path, timeout=self._timeout, **kwargs
                )
                break
            except retry_on as exc:
                if attempt == self._retries:
                    raise RemoteError(
                        f"{method} {self.url}{path} failed after {attempt + 1} tries: {exc!r}"
                    ) from None
                log.debug("retry %s %s in %.2fs (%r)", method, path, delay, exc)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
            except httpx.HTTPError as exc:
                raise RemoteError(
                    f"{method} {self.url}{path} failed: {exc!r}"
                ) from None
        if response.status_code == 204:
            return None
        try:
            data = response.json()
        except ValueError:
            raise RemoteError(
                f"{method} {self.url}{path}: HTTP {response.status_code}, not JSON"
            ) from None
        kind = data.get("kind") if isinstance(data, dict) else None
        message = data.get("error", data) if isinstance(data, dict) else data
        if kind == "unknown_session":
            raise SessionLost(f"{self.url}: {message}")
        if kind == "unknown_task":
            raise TaskError(f"{self.url}: {message}")
        if kind == "episode_state":
            raise EnvError(f"{self.url}: {message}")
        if response.status_code >= 400:
            raise RemoteError(
                f"{method} {self.url}{path}: HTTP {response.status_code}: {message}"
            )
        return data

"""Serve any evoflow environment over HTTP.

Two route families share one session pool:

- evoflow's protocol under ``/v1`` (JSON in and out, proper status codes):

  ====== ================================== ============================================
  GET    /v1/info                           env name, turn cap, system prompt, split sizes
  GET    /v1/tasks?split=test               task ids of a split (train, validation,
                                            test)
  POST   /v1/sessions                       create → 201 ``{"id"}``
  POST   /v1/sessions/{id}/reset            ``{"task_id"}`` → ``{"observation"}``
  POST   /v1/sessions/{id}/step             ``{"action"}`` → observation, reward, done,
                                            success, valid
  GET    /v1/sessions/{id}/observation      ``{"observation"}``
  GET    /v1/sessions/{id}/available_actions ``{"actions"}``
  DELETE /v1/sessions/{id}                  close → 204
  POST   /v1/step                           many sessions at once: ``{"steps": [{"id",
                                            "action"}]}`` → ``{"results": [...]}``
  ====== ================================== ============================================

- AgentGym-compatible routes with their exact shapes (``evoflow.envs.agentgym``),
  so AgentGym's own clients drive these servers unchanged.

Errors are JSON ``{"error": "..."}``: 400/422 malformed request, 404 unknown session
or task, 409 step without a running episode, 413 body too large, 429 too many
sessions. Handlers never return a traceback.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from evoflow.envs import env_class
from evoflow.envs.agentgym import add_agentgym_routes
from evoflow.envs.base import SPLITS, EnvError, Step, TaskError
from evoflow.envs.sessions import SessionPool, TooManySessions, UnknownSession

log = logging.getLogger(__name__)

MAX_ACTION_CHARS = 4_096
MAX_TASK_ID_CHARS = 128
MAX_BATCH = 1_024
SPLIT_PATTERN = f"^({'|'.join(SPLITS)})$"  # train, validation or test


class ResetRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task_id: Annotated[str, Field(min_length=1, max_length=MAX_TASK_ID_CHARS)]


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Annotated[str, Field(max_length=MAX_ACTION_CHARS)]


class BatchItem(StepRequest):
    id: int


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    steps: Annotated[list[BatchItem], Field(max_length=MAX_BATCH)]


def step_payload(result: Step) -> dict:
    return {
        "observation": result.observation,
        "reward": result.reward,
        "done": result.done,
        "success": result.success,
        "valid": result.valid,
    }


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``max_bytes`` with 413."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (
            not declared.isdigit() or int(declared) > self.max_bytes
        ):
            return await _too_large(send, self.max_bytes)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise _BodyTooLarge
            return message

        try:
            return await self.app(scope, limited_receive, send)
        except _BodyTooLarge:
            return await _too_large(send, self.max_bytes)


class _BodyTooLarge(Exception):
    pass


async def _too_large(send, max_bytes: int) -> None:
    body = f'{{"error": "request body over {max_bytes} bytes", "kind": "too_large"}}'
    body = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def create_app(
    env_name: str,
    max_sessions: int = 256,
    idle_ttl: float = 600.0,
    max_body_bytes: int = 64 * 1024,
) -> FastAPI:
    """The ASGI app serving ``env_name`` (see the module docstring for routes)."""
    cls = env_class(env_name)
    pool = SessionPool(cls, max_sessions=max_sessions, idle_ttl=idle_ttl)
    app = FastAPI(
        title=f"evoflow {env_name} environment", docs_url=None, redoc_url=None
    )
    app.state.pool = pool
    _add_error_handlers(app)
    _add_v1_routes(app, env_name, pool)
    add_agentgym_routes(app, env_name, pool)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    def error(status: int, kind: str):
        async def handler(request: Request, exc: Exception) -> JSONResponse:
            return JSONResponse(
                {"error": _message(exc), "kind": kind}, status_code=status
            )

        return handler

    app.add_exception_handler(UnknownSession, error(404, "unknown_session"))
    app.add_exception_handler(TaskError, error(404, "unknown_task"))
    app.add_exception_handler(EnvError, error(409, "episode_state"))
    app.add_exception_handler(TooManySessions, error(429, "too_many_sessions"))

    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
            for e in exc.errors()[:5]
        )
        return JSONResponse(
            {"error": f"malformed request ({problems})", "kind": "malformed_request"},
            status_code=422,
        )

    app.add_exception_handler(RequestValidationError, invalid)

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": "internal error; see the server log", "kind": "internal"},
            status_code=500,
        )

    app.add_exception_handler(Exception, unexpected)


def _message(exc: Exception) -> str:
    return str(exc.args[0]) if exc.args else type(exc).__name__


def _add_v1_routes(app: FastAPI, env_name: str, pool: SessionPool) -> None:
    cls = env_class(env_name)
    probe = cls()

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "env": env_name, "sessions": len(pool)}

    @app.get("/v1/info")
    async def info() -> dict:
        return {
            "env": env_name,
            "max_turns": cls.max_turns,
            "system_prompt": probe.system_prompt,
            "splits": {s: len(probe.task_ids(s)) for s in SPLITS},
            "limits": {"max_sessions": pool.max_sessions, "idle_ttl": pool.idle_ttl},
        }

    @app.get("/v1/tasks")
    async def tasks(split: Annotated[str, Query(pattern=SPLIT_PATTERN)]) -> dict:
        return {"task_ids": probe.task_ids(split)}

    @app.post("/v1/sessions", status_code=201)
    async def create() -> dict:
        return {"id": pool.create()}

    @app.post("/v1/sessions/{session_id}/reset")
    async def reset(session_id: int, body: ResetRequest) -> dict:
        session = pool.get(session_id)
        session.score = 0.0
        return {"observation": session.env.reset(body.task_id)}

    @app.post("/v1/sessions/{session_id}/step")
    async def step(session_id: int, body: StepRequest) -> dict:
        session = pool.get(session_id)
        result = session.env.step(body.action)
        session.score += result.reward
        return step_payload(result)

    @app.post("/v1/step")
    async def step_many(body: BatchRequest) -> dict:
        sessions = [pool.get(item.id) for item in body.steps]  # 404 before any step
        results = []
        for session, item in zip(sessions, body.steps, strict=True):
            try:
                result = session.env.step(item.action)
            except EnvError as exc:
                results.append({"error": _message(exc)})
                continue
            session.score += result.reward
            results.append(step_payload(result))
        return {"results": results}

    @app.get("/v1/sessions/{session_id}/observation")
    async def observation(session_id: int) -> dict:
        return {"observation": pool.get(session_id).env.observation}

    @app.get("/v1/sessions/{session_id}/available_actions")
    async def available_actions(session_id: int) -> dict:
        return {"actions": pool.get(session_id).env.available_actions()}

    @app.delete("/v1/sessions/{session_id}", status_code=204)
    async def close(session_id: int) -> Response:
        pool.close(session_id)
        return Response(status_code=204)


def serve(
    env_name: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = 256,
    idle_ttl: float = 600.0,
    max_body_bytes: int = 64 * 1024,
) -> None:
    """Run the server in the foreground until interrupted."""
    import uvicorn

    app = create_app(env_name, max_sessions, idle_ttl, max_body_bytes)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=30,
        h11_max_incomplete_event_size=16 * 1024,
    )

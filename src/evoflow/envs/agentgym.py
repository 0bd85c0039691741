"""AgentGym-compatible routes, so AgentGym's own clients drive our servers unchanged.

Shapes follow AgentGym's env servers exactly (see FACTS): BabyAI and TextCraft at
the root with ``id``/``data_idx``; Maze and Wordle under ``/maze`` and ``/wordle``
with ``game``/``seed``; WebShop at the root with ``env_idx``/``session_id``, plus
the ``/close`` its client calls; SciWorld at the root like BabyAI, its reset and
step answers carrying the score (0-100) and its reset the task name, variation
and description. TextCraft's ``/create`` also takes AgentGym's
own ``commands`` and ``goal`` (a session with that task). As in
AgentGym, problems inside a well-formed request (unknown id, finished episode,
unknown task) answer HTTP 200 with ``{"error": "..."}`` because AgentGym's
clients assert 200 and look for that key; malformed bodies still get 422 and a
full pool 429. Session ids are never reused (AgentGym's WebShop recycles them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI
from pydantic import BaseModel, ConfigDict, Field

from evoflow.envs.base import EnvError, TaskError
from evoflow.envs.sessions import SessionPool, UnknownSession

MAX_ACTION_CHARS = 4_096
Action = Annotated[str, Field(max_length=MAX_ACTION_CHARS)]
Index = Annotated[int, Field(ge=0, lt=2**53)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class IdBody(_Body):
    id: Index


class ResetBody(IdBody):
    data_idx: Index = 0


class StepBody(IdBody):
    action: Action


class GameBody(IdBody):
    game: Index = 0


class SeedBody(IdBody):
    seed: Index = 0


class CreateCraftBody(_Body):
    commands: Annotated[str, Field(max_length=MAX_ACTION_CHARS * 4)] | None = None
    goal: Action | None = None


class ShopResetBody(_Body):
    env_idx: Index
    session_id: Index = 0


class ShopCloseBody(_Body):
    env_idx: Index


class ShopStepBody(_Body):
    env_idx: Index
    action: Action


def _guarded(call: Callable[[], Any]) -> Any:
    """Run ``call``; turn env-level failures into AgentGym's 200 ``{"error"}``."""
    try:
        return call()
    except (UnknownSession, TaskError, EnvError) as exc:
        return {"error": str(exc.args[0]) if exc.args else type(exc).__name__}


def add_agentgym_routes(app: FastAPI, env_name: str, pool: SessionPool) -> None:
    """Mount the AgentGym route family matching ``env_name`` (if there is one)."""
    builders = {
        "babyai": _babyai,
        "textcraft": _textcraft,
        "maze": _maze,
        "wordle": _wordle,
        "webshop": _webshop,
        "sciworld": _sciworld,
    }
    if env_name in builders:
        app.include_router(builders[env_name](pool))


def _step(pool: SessionPool, session_id: int, action: str):
    session = pool.get(session_id)
    result = session.env.step(action)
    session.score += result.reward
    return session, result


def _reset(pool: SessionPool, session_id: int, task: int) -> tuple[Any, str]:
    session = pool.get(session_id)
    session.score = 0.0
    return session, session.env.reset(str(task))


def _add_session_routes(router: APIRouter, pool: SessionPool) -> None:
    """``/create``, ``/observation`` and ``/close`` as BabyAI and SciWorld have them."""

    @router.post("/create")
    async def create() -> dict:
        return {"id": pool.create()}

    @router.get("/observation")
    async def observation(id: Index) -> Any:
        return _guarded(lambda: pool.get(id).env.observation)

    @router.post("/close")
    async def close(body: IdBody) -> Any:
        return _guarded(lambda: pool.close(body.id) or True)


def _babyai(pool: SessionPool) -> APIRouter:
    router = APIRouter()
    _add_session_routes(router, pool)

    @router.post("/reset")
    async def reset(body: ResetBody) -> Any:
        def run():
            _, observation = _reset(pool, body.id, body.data_idx)
            return {"observation": observation, "reward": 0.0, "score": 0.0,
                    "deleted": False, "done": False}  # fmt: skip

        return _guarded(run)

    @router.post("/step")
    async def step(body: StepBody) -> Any:
        def run():
            session, result = _step(pool, body.id, body.action)
            return {"observation": result.observation, "reward": result.reward,
                    "score": session.score, "done": result.done}  # fmt: skip

        return _guarded(run)

    return router


def _textcraft(pool: SessionPool) -> APIRouter:
    router = APIRouter()

    @router.post("/create")
    async def create(body: CreateCraftBody | None = None) -> Any:
        commands = body.commands if body is not None else None
        goal = body.goal if body is not None else None
        if (commands is None) != (goal is None):
            return {"error": "give both commands and goal, or neither"}
        session_id = pool.create()

        def run():
            if commands is None:
                _, observation = _reset(pool, session_id, 0)
            else:
                session = pool.get(session_id)
                session.score = 0.0
                observation = session.env.reset_custom(commands, goal)
            return {
                "id": session_id,
                "observation": observation,
                "done": False,
                "reward": 0,
            }

        try:
            return _guarded(run)
        except ValueError as exc:
            pool.close(session_id)
            return {"error": str(exc)}

    @router.post("/reset")
    async def reset(body: ResetBody) -> Any:
        def run():
            _, observation = _reset(pool, body.id, body.data_idx)
            return {
                "id": body.id,
                "observation": observation,
                "done": False,
                "reward": 0,
            }

        return _guarded(run)

    @router.post("/step")
    async def step(body: StepBody) -> Any:
        def run():
            _, result = _step(pool, body.id, body.action)
            return {"observation": result.observation, "reward": result.reward,
                    "done": result.done}  # fmt: skip

        return _guarded(run)

    @router.get("/observation")
    async def observation(id: Index) -> Any:
        return _guarded(lambda: pool.get(id).env.observation)

    @router.get("/commands")
    async def commands(id: Index) -> Any:
        return _guarded(lambda: "\n".join(pool.get(id).env.commands))

    @router.get("/goal")
    async def goal(id: Index) -> Any:
        return _guarded(lambda: pool.get(id).env.goal)

    @router.get("/detail")
    async def detail(id: Index) -> Any:
        def run():
            env = pool.get(id).env
            return {"id": id, "observation": env.observation,
                    "commands": "\n".join(env.commands), "goal": env.goal}  # fmt: skip

        return _guarded(run)

    @router.post("/close")
    async def close(body: IdBody) -> Any:
        return _guarded(lambda: pool.close(body.id) or True)

    return router


def _lmrl(pool: SessionPool, prefix: str) -> APIRouter:
    """Maze and Wordle share one layout; their reset routes differ."""
    router = APIRouter(prefix=prefix)

    @router.post("/create")
    async def create() -> dict:
        return {"id": pool.create()}

    @router.post("/step")
    async def step(body: StepBody) -> Any:
        def run():
            _, result = _step(pool, body.id, body.action)
            return {"observation": result.observation, "reward": result.reward,
                    "done": result.done}  # fmt: skip

        return _guarded(run)

    return router


def _maze(pool: SessionPool) -> APIRouter:
    router = _lmrl(pool, "/maze")

    @router.post("/reset")
    async def reset(body: GameBody) -> Any:
        return _guarded(lambda: {"observation": _reset(pool, body.id, body.game)[1]})

    @router.get("/available_actions")
    async def available_actions() -> list[str]:
        return ["move left", "move right", "move up", "move down"]

    return router


def _wordle(pool: SessionPool) -> APIRouter:
    router = _lmrl(pool, "/wordle")

    @router.post("/reset")
    async def reset(body: SeedBody) -> Any:
        return _guarded(lambda: {"observation": _reset(pool, body.id, body.seed)[1]})

    @router.get("/filtered_vocab")
    async def filtered_vocab(id: Index) -> Any:
        """Words still consistent with the feedback (the full list before a game)."""
        return _guarded(lambda: list(pool.get(id).env.candidates))

    return router


def _webshop(pool: SessionPool) -> APIRouter:
    router = APIRouter()

    @router.post("/create")
    async def create() -> int:
        return pool.create()

    @router.post("/reset")
    async def reset(body: ShopResetBody) -> Any:
        return _guarded(lambda: [_reset(pool, body.env_idx, body.session_id)[1], None])

    @router.post("/step")
    async def step(body: ShopStepBody) -> Any:
        def run():
            _, result = _step(pool, body.env_idx, body.action)
            return {"state": result.observation, "reward": result.reward,
                    "done": result.done, "info": None}  # fmt: skip

        return _guarded(run)

    @router.get("/observation")
    async def observation(env_idx: Index) -> Any:
        return _guarded(lambda: pool.get(env_idx).env.observation)

    @router.get("/available_actions")
    async def available_actions(env_idx: Index) -> Any:
        def run():
            has_search_bar, clickables = pool.get(env_idx).env.page_actions()
            return {"has_search_bar": has_search_bar, "clickables": clickables}

        return _guarded(run)

    @router.get("/instruction_text")
    async def instruction_text(env_idx: Index) -> Any:
        return _guarded(lambda: pool.get(env_idx).env.page.instruction)

    @router.post("/close")
    async def close(body: ShopCloseBody) -> Any:
        """AgentGym's WebShop client posts here when done (its server has no such
        route); the session is closed and the answer is ``true``."""
        return _guarded(lambda: pool.close(body.env_idx) or True)

    return router


def _sciworld(pool: SessionPool) -> APIRouter:
    router = APIRouter()
    _add_session_routes(router, pool)

    @router.post("/reset")
    async def reset(body: ResetBody) -> Any:
        def run():
            env = _reset(pool, body.id, body.data_idx)[0].env
            task, variation = env.game
            return {"task_name": task, "var_num": variation,
                    "task_description": env.task_description,
                    "observation": env.look_observation, "reward": 0,
                    "score": env.score, "deleted": False, "done": False}  # fmt: skip

        return _guarded(run)

    @router.post("/step")
    async def step(body: StepBody) -> Any:
        def run():
            before = pool.get(body.id).env.score
            session, result = _step(pool, body.id, body.action)
            score = session.env.score  # the reward is the score's change, as there
            return {"observation": result.observation, "reward": score - before,
                    "score": score, "done": result.done}  # fmt: skip

        return _guarded(run)

    @router.get("/action_hint")
    async def action_hint(id: Index) -> Any:
        return _guarded(lambda: pool.get(id).env.action_hint())

    @router.get("/goals")
    async def goals(id: Index) -> Any:
        return _guarded(lambda: {"goals": pool.get(id).env.goal_progress()})

    @router.get("/detail")
    async def detail(id: Index) -> Any:
        def run():
            env = pool.get(id).env
            task, variation = env.game
            return {"task_name": task, "var_num": variation, "score": env.score,
                    "observation": env.observation, "done": not env.running}  # fmt: skip

        return _guarded(run)

    return router

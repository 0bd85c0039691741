"""The explorer's web app (FastAPI; ``evoflow explore-ui`` serves it on
localhost). GET only: the app never writes to the store, and it answers only
requests whose Host is an address it serves (a page elsewhere cannot reach it
through DNS rebinding)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse
from starlette.middleware.trustedhost import TrustedHostMiddleware

from evoflow.explorer import pages
from evoflow.explorer.data import Filters, Store

PAGE = 100
MAX_OFFSET = 10**9
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The Host names the app answers when bound to ``host``: loopback's names
    for a loopback address, else the address itself; plus ``extra``."""
    return (*(LOOPBACK if host in LOOPBACK else (host,)), *extra)


def create_app(root: str | Path, hosts: tuple[str, ...] = LOOPBACK) -> FastAPI:
    """An app over the store under ``root`` (read once now, again when a read
    fails) that refuses requests whose Host header is not in ``hosts``."""
    store = Store(root)
    app = FastAPI(title="evoflow trajectories", docs_url=None, redoc_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))

    def html(title: str, body: str) -> HTMLResponse:
        return HTMLResponse(pages.page(title, body, store.skipped))

    @app.get("/", response_class=HTMLResponse)
    def index(filters: RequestFilters,
              offset: int = Query(0, ge=0, le=MAX_OFFSET)) -> HTMLResponse:  # fmt: skip
        rows, total = store.episodes(filters, PAGE, offset)
        body = (pages.filter_form(filters, store.choices())
                + pages.success_chart(store.success_by_round(filters))
                + pages.episode_table(rows, total, filters, offset, PAGE))  # fmt: skip
        return html("episodes", body)

    @app.get("/episode", response_class=HTMLResponse)
    def episode(id: str) -> HTMLResponse:
        found = store.episode(id)
        if found is None:
            raise HTTPException(404, f"no episode {id!r}")
        return html(f"episode {id}", pages.summary(found) + pages.turns(found))

    @app.get("/compare", response_class=HTMLResponse)
    def compare(
        task_id: str, env: str, a: str, b: str = "", round: str = ""
    ) -> HTMLResponse:
        methods = store.choices()["method"]
        other = b or next((m for m in methods if m != a), a)
        at = _int(round, "round")
        sides = [(m, store.pick(m, task_id, env, at)) for m in (a, other)]
        return html(
            f"{env} task {task_id}", pages.comparison(task_id, env, sides, methods)
        )

    @app.get("/api/episodes")
    def api_episodes(filters: RequestFilters,
                     offset: int = Query(0, ge=0, le=MAX_OFFSET)) -> dict:  # fmt: skip
        rows, total = store.episodes(filters, PAGE, offset)
        return {"total": total, "episodes": rows, "skipped": store.skipped}

    return app


def _filters(experiment: str = "", method: str = "", round: str = "", client: str = "",
             env: str = "", success: str = "", termination: str = "",
             split: str = "") -> Filters:  # fmt: skip
    """The episode filters of a request's query parameters ('' = any)."""
    return Filters(experiment, method, _int(round, "round"), client, env, _bool(success),
                   termination, split)  # fmt: skip


RequestFilters = Annotated[Filters, Depends(_filters)]


def _int(text: str, name: str) -> int | None:
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise HTTPException(
            400, f"{name} must be a whole number, got {text!r}"
        ) from None


def _bool(text: str) -> bool | None:
    if text in ("", "any"):
        return None
    if text not in ("true", "false"):
        raise HTTPException(400, f"success must be true, false or empty, got {text!r}")
    return text == "true"


def serve(root: str | Path, host: str = "127.0.0.1", port: int = 8765,
          extra_hosts: tuple[str, ...] = ()) -> None:  # fmt: skip
    """Serve the explorer until interrupted (localhost unless ``host`` says
    otherwise), answering the Host names of ``allowed_hosts``."""
    import uvicorn

    app = create_app(root, allowed_hosts(host, extra_hosts))
    uvicorn.run(app, host=host, port=port, log_level="info")

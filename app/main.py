"""The ASGI application: `app.main:app`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.routing import APIRoute

from app.api import (
    bundles,
    campaigns,
    characters,
    dice_epochs,
    encounters,
    events,
    play,
    request_id,
    rolls,
    rulesets,
    stats,
    system,
    webhooks,
)
from app.api.admission import Admission
from app.api.asyncapi import install_asyncapi
from app.api.docs import install_docs
from app.api.headers import DASHBOARD, Files
from app.api.limits import BodySizeLimit
from app.api.openapi_doc import CONTRACT_VERSION, install_openapi
from app.api.problems import install_error_handlers
from app.api.ratelimit import RateLimiter
from app.core.config import Settings, get_settings
from app.core.db import THREADS, SessionOpener, Sessions, open_session, sqlite_engine
from app.core.wal import run_checkpoints
from app.services.webhook_delivery import run_dispatcher

WEB = Path(__file__).resolve().parent / "web"  # the dashboard: plain ES modules + CSS, no build step
# the dashboard's files are revalidated on each load (their ETag makes it a 304), so an update is never half-seen
NO_CACHE = {"Cache-Control": "no-cache"}


DESCRIPTION = """Keeps tabletop role-playing characters and applies the rules of four French
RPG systems to them (Great Cosmos, Asgard, Rulebook D100, Worlds Awakening), logging every die.
Errors are application/problem+json (RFC 9457)."""


def operation_id(route: APIRoute) -> str:
    """Short operation ids: the handler's name (`run_test`, `get_odds`, `list_rolls`…), unique in the app."""
    return route.name


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # as many threadpool threads as the pool has connections for (app.core.db)
    anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
    # the webhook delivery loop and SQLite's checkpoints (app.core.wal), stopped with the app
    settings: Settings = app.state.settings
    tasks = []
    if settings.webhook_delivery:
        tasks.append(asyncio.create_task(run_dispatcher(app.state)))
    engine = sqlite_engine(app.state.sessions)
    if engine is not None and settings.sqlite_checkpoint_seconds > 0:
        tasks.append(asyncio.create_task(run_checkpoints(engine, settings.sqlite_checkpoint_seconds)))
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await task


def create_app(settings: Settings | None = None) -> FastAPI:
    app_sessions: Sessions  # the requests' session factory (app.api.deps.session_factory)
    if settings is not None:  # its database too (else the environment's, read when a session opens)
        app_sessions = SessionOpener.of(settings)
    else:
        settings, app_sessions = get_settings(), open_session
    app = FastAPI(
        title="jdr-rules-api",
        version=CONTRACT_VERSION,
        description=DESCRIPTION,
        lifespan=_lifespan,
        generate_unique_id_function=operation_id,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.sessions = app_sessions
    app.state.rate_limiter = RateLimiter(settings)
    # the hot routes first: a request is matched against the routes in this order
    for module in (
        play,
        rolls,
        characters,
        bundles,
        campaigns,
        events,
        encounters,
        webhooks,
        dice_epochs,
        stats,
        rulesets,
        system,
    ):
        app.include_router(module.router)
    install_error_handlers(app)
    install_openapi(app)
    install_docs(app)  # Swagger UI and ReDoc with their assets served here (no CDN)
    install_asyncapi(app)  # the event stream's AsyncAPI 3 document, beside openapi.json
    app.mount(
        "/web", Files(directory=WEB, extra=NO_CACHE), name="web"
    )  # the dashboard's files, a client of the public API

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    @app.api_route("/join", methods=["GET", "HEAD"], include_in_schema=False)  # an invitation link: /join#<code>
    async def dashboard() -> FileResponse:
        """The dashboard's page, with its Content-Security-Policy."""
        return FileResponse(WEB / "index.html", headers={**NO_CACHE, **DASHBOARD})

    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["ETag", "Location", "Retry-After", "X-Request-Id", "RateLimit", "RateLimit-Policy"],
        )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, larger=bundles.larger_bodies(settings))
    app.add_middleware(
        Admission,
        max_in_flight=settings.max_in_flight,
        max_waiting=settings.max_waiting,
        wait_seconds=settings.admission_wait_seconds,
    )
    request_id.install(app)  # outermost: X-Request-Id on every response, `request_id` in every problem
    return app


app = create_app()

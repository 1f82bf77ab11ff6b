"""The ASGI application: `app.main:app`."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app.api import campaigns, characters, events, play, rolls, rulesets, system
from app.core.config import Settings, get_settings
from app.api.problems import install_error_handlers
from app.api.limits import BodySizeLimit
from app.api.openapi_doc import install_openapi
from app.api.ratelimit import RateLimiter

DESCRIPTION = """Keeps tabletop role-playing characters and applies the rules of four French
RPG systems to them (Great Cosmos, Asgard, Rulebook D100, Worlds Awakening), logging every die.
Errors are application/problem+json (RFC 9457)."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(title="jdr-rules-api", version="1.0.0", description=DESCRIPTION)
    app.state.settings = settings
    app.state.rate_limiter = RateLimiter(settings)
    for module in (system, rulesets, campaigns, characters, play, rolls, events):
        app.include_router(module.router)
    install_error_handlers(app)
    install_openapi(app)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                           allow_headers=["*"], expose_headers=["ETag", "Retry-After"])
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    return app


app = create_app()

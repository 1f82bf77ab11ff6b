"""problem+json (RFC 9457) rendering of every error: domain, validation, HTTP, unexpected."""
from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError, OperationalError, TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.kit import errors as e

TYPE_BASE = "https://jdr-rules-api.dev/problems/"

log = logging.getLogger("app.errors")
PROBLEM = "application/problem+json"


def problem(status: int, title: str, detail: str, *, slug: str | None = None,
            headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body = {"type": TYPE_BASE + (slug or str(status)), "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _loc(loc: tuple | list) -> list:
    return [p if isinstance(p, (int, str)) else str(p) for p in loc]


def validation_errors(errors: list[dict], prefix: tuple = ()) -> list[dict]:
    return [{"loc": _loc(prefix + tuple(e.get("loc", ()))), "msg": e.get("msg", "invalid")} for e in errors]


def validation_problem(errors: list[dict], detail: str | None = None) -> JSONResponse:
    first = errors[0] if errors else {"loc": [], "msg": "invalid"}
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return problem(422, "Validation error", detail or f"{where}: {first['msg']}", slug="validation-error", errors=errors)


# The one place where an error class becomes an HTTP status (the most specific class wins).
STATUS: dict[type[e.AppError], int] = {
    e.AppError: 400,
    e.BadRequest: 400,
    e.Unauthorized: 401,
    e.Forbidden: 403,
    e.NotFound: 404,
    e.Conflict: 409,
    e.PreconditionFailed: 412,
    e.PayloadTooLarge: 413,
    e.RuleError: 422,
    e.TooManyRequests: 429,
    e.Unavailable: 503,
}


def status_of(cls: type[e.AppError]) -> int:
    return next(STATUS[k] for k in cls.__mro__ if k in STATUS)


def app_error_response(exc: e.AppError) -> JSONResponse:
    status = status_of(type(exc))
    extra = dict(exc.extra)
    if status == 422:
        extra.setdefault("errors", [{"loc": ["body", *exc.field.split(".")] if exc.field else ["body"], "msg": exc.detail}])
    headers: dict[str, str] = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
        extra.setdefault("retry_after", exc.retry_after)
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return problem(status, exc.title, exc.detail, slug=exc.slug, headers=headers or None, **extra)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(e.AppError)
    async def _app_error(_req: Request, exc: e.AppError):
        return app_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_req: Request, exc: RequestValidationError):
        return validation_problem(validation_errors(list(exc.errors())))

    @app.exception_handler(ValidationError)
    async def _pydantic_validation(_req: Request, exc: ValidationError):
        return validation_problem(validation_errors(exc.errors(include_url=False), ("body",)))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_req: Request, exc: StarletteHTTPException):
        titles = {404: "Not found", 405: "Method not allowed", 401: "Unauthorized", 413: "Payload too large"}
        return problem(exc.status_code, titles.get(exc.status_code, "HTTP error"), str(exc.detail),
                       headers=getattr(exc, "headers", None))

    @app.exception_handler(PoolTimeout)
    async def _pool_exhausted(_req: Request, exc: PoolTimeout):
        log.warning("database pool exhausted: %s", exc)
        return problem(503, "Service unavailable", "every database connection is busy; retry shortly",
                       slug="unavailable", headers={"Retry-After": "1"})

    @app.exception_handler(DBAPIError)
    async def _database(_req: Request, exc: DBAPIError):
        if exc.connection_invalidated or isinstance(exc, OperationalError):
            log.warning("database unavailable: %s", exc.orig)
            return problem(503, "Service unavailable", "the database connection failed; retry shortly",
                           slug="unavailable", headers={"Retry-After": "1"})
        log.exception("database error", exc_info=exc)
        return problem(500, "Internal error", "an unexpected error occurred; it has been logged", slug="internal")

    @app.exception_handler(Exception)
    async def _unexpected(_req: Request, exc: Exception):
        log.exception("unexpected error", exc_info=exc)
        return problem(500, "Internal error", "an unexpected error occurred; it has been logged", slug="internal")

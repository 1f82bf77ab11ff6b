"""problem+json (RFC 9457) rendering of every error: domain, validation, HTTP, unexpected."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.kit import errors as e
from app.models.validation import faults

TYPE_BASE = "https://jdr-rules-api.dev/problems/"

log = logging.getLogger("app.errors")
PROBLEM = "application/problem+json"
JSON = "application/json"
# where the body middleware (app.api.limits) leaves its refusal of a body, for the
# route to raise after its access checks (app.api.deps.CheckedRoute)
BODY_REFUSAL = "jdr.body_refusal"


class UnsupportedMediaType(e.AppError):
    """A body that is not JSON."""

    title = "Unsupported media type"
    code = "unsupported_media_type"


class MalformedJson(e.BadRequest):
    """A JSON body the parser cannot read."""

    title = "Malformed JSON"
    code = "malformed_json"


class BodyTooDeep(e.RuleError):
    title = "Validation error"
    code = "body_too_deep"


e.define(
    "unsupported_media_type",
    UnsupportedMediaType,
    "The body is not JSON (`accepted` lists what the route takes; see `Accept-Post`/`Accept-Patch`).",
    accepted=e.STRS,
)
e.define(
    "malformed_json", MalformedJson, "The body is not valid JSON (`line`, `column`: where).", line=e.INT, column=e.INT
)


# RFC 9110 §15.5.16: a 415 tells the client which media type to send: `Accept-Post` (W3C LDP)
# on a POST, `Accept-Patch` (RFC 5789) on a PATCH
ACCEPT_HEADER = {"POST": "Accept-Post", "PATCH": "Accept-Patch"}


def not_json(media_type: str | None) -> UnsupportedMediaType:
    sent = f"a body of type {media_type!r}" if media_type else "a body without Content-Type that is not JSON"
    return UnsupportedMediaType(f"this route takes {JSON}; the request sent {sent}", extra={"accepted": [JSON]})


def unreadable_body(cause: BaseException | None, *, has_media_type: bool) -> e.AppError:
    """The parser's own words and position (`Expecting ',' delimiter: line 1 column 18`);
    a body without Content-Type that does not parse was not meant as JSON: 415."""
    if not has_media_type:
        return not_json(None)
    if isinstance(cause, json.JSONDecodeError):
        return MalformedJson(
            f"the body is not valid JSON: {cause.msg}: line {cause.lineno} column {cause.colno}",
            extra={"line": cause.lineno, "column": cause.colno},
        )
    return MalformedJson("the body is not valid JSON (nor UTF-8 text)")


def type_of(code: str) -> str:
    """The problem's `type`: a URI built from its code (`not_your_turn` -> …/problems/not-your-turn)."""
    return TYPE_BASE + code.replace("_", "-")


def problem_body(status: int, title: str, detail: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_of(code), "title": title, "status": status, "detail": detail, "code": code, **extra}


def problem(
    status: int,
    title: str,
    detail: str,
    *,
    code: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = problem_body(status, title, detail, code, **extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def validation_problem(errors: list[dict], detail: str | None = None) -> JSONResponse:
    first = errors[0] if errors else {"loc": [], "msg": "invalid"}
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return problem(
        422, "Validation error", detail or f"{where}: {first['msg']}", code="validation_failed", errors=errors
    )


# The one place where an error class becomes an HTTP status (the most specific class wins).
STATUS: dict[type[e.AppError], int] = {
    e.AppError: 400,
    e.BadRequest: 400,
    e.Unauthorized: 401,
    e.Forbidden: 403,
    e.NotFound: 404,
    e.MethodNotAllowed: 405,
    e.Conflict: 409,
    e.PreconditionFailed: 412,
    e.PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    e.RuleError: 422,
    e.TooManyRequests: 429,
    e.Unavailable: 503,
    e.Internal: 500,
}


def status_of(cls: type[e.AppError]) -> int:
    return next(STATUS[k] for k in cls.__mro__ if k in STATUS)


def code_status(code: str) -> int:
    """The status every problem of `code` has."""
    return status_of(e.CODES[code].family)


# a status the router or a dependency raised itself (StarletteHTTPException) -> its code
HTTP_CODES = {
    400: "bad_request",
    401: "token_missing",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    429: "rate_limited",
    503: "unavailable",
}


# A field spelled as an HTTP header (Idempotency-Key, If-Match, Last-Event-ID) is
# located in `header`; these are query parameters, and so is a field the service names
# `query.<name>` (a parameter whose name a body also uses); anything else is in the body.
_HEADER_FIELD = re.compile(r"[A-Z][A-Za-z]*(?:-[A-Za-z]+)+")
QUERY_FIELDS = frozenset({"cursor", "after", "limit", "ticket", "follow"})


def located(field: str | None) -> list[str]:
    if not field:
        return ["body"]
    if _HEADER_FIELD.fullmatch(field):
        return ["header", field]
    if field in QUERY_FIELDS:
        return ["query", field]
    if field.startswith(e.QUERY):
        return ["query", field.removeprefix(e.QUERY)]
    return ["body", *field.split(".")]


def _relocated(errors: list[dict]) -> list[dict]:
    """Errors a service located under `body` that are about a header or the query."""
    out = []
    for err in errors:
        loc = err.get("loc") or []
        if len(loc) == 2 and loc[0] == "body" and isinstance(loc[1], str):
            err = {**err, "loc": located(loc[1])}
        out.append(err)
    return out


def app_error_response(exc: e.AppError) -> JSONResponse:
    status = status_of(type(exc))
    extra = dict(exc.extra)
    if status == 422:
        extra.setdefault("errors", [{"loc": located(exc.field), "msg": exc.detail}])
        extra["errors"] = _relocated(extra["errors"])
    headers: dict[str, str] = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
        extra.setdefault("retry_after", exc.retry_after)
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return problem(status, exc.title, exc.detail, code=exc.code, headers=headers or None, **extra)


# PostgreSQL's SQLSTATEs of a request the database refused for now: a deadlock, a
# serialization failure or a foreign key broken by a concurrent deletion is a race lost to another
# writer, never "the connection failed" nor a 500
RACE_LOST = (
    "the request lost a race with a concurrent write (the database found a deadlock); nothing of it was written; retry"
)
REFUSED_NOW: dict[str, tuple[type[e.AppError], str]] = {
    "40P01": (e.Conflict, RACE_LOST),
    "40001": (e.Conflict, RACE_LOST.replace("found a deadlock", "could not serialize it")),
    # a row the request refers to was deleted by a concurrent commit (the use cases hold what they refer
    # to where it matters, and answer 401, 404 or 422 then): the retry gets that answer
    "23503": (e.Conflict, RACE_LOST.replace("the database found a deadlock", "a row it refers to was deleted")),
    "55P03": (
        e.Unavailable,
        "a row the request needs stayed locked by another transaction beyond the lock "
        "timeout (DB_LOCK_TIMEOUT_SECONDS); nothing of it was written; retry shortly",
    ),
    "57014": (
        e.Unavailable,
        "a database statement of the request ran beyond the statement timeout "
        "(DB_STATEMENT_TIMEOUT_SECONDS); nothing of it was written; retry shortly",
    ),
}


def database_refusal(exc: DBAPIError) -> e.AppError | None:
    """The refusal a database error means for the client (each with Retry-After), or None when it
    is a bug (a 500): a race lost (409), a lock or statement timeout, a dead connection, SQLite busy (503)."""
    known = REFUSED_NOW.get(getattr(exc.orig, "sqlstate", None) or "")
    if known is not None:
        cls, detail = known
        return cls(detail, retry_after=1, code="race_lost" if cls is e.Conflict else "timeout")
    if exc.connection_invalidated or isinstance(exc, OperationalError):
        return e.Unavailable("the database connection failed; retry shortly", retry_after=1)
    return None


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(e.AppError)
    async def _app_error(req: Request, exc: e.AppError) -> Response:
        response = app_error_response(exc)
        if isinstance(exc, UnsupportedMediaType) and req.method in ACCEPT_HEADER:
            response.headers[ACCEPT_HEADER[req.method]] = JSON
        return response

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_req: Request, exc: RequestValidationError) -> Response:
        return validation_problem(faults(list(exc.errors())))

    @app.exception_handler(ValidationError)
    async def _pydantic_validation(_req: Request, exc: ValidationError) -> Response:
        return validation_problem(faults(exc.errors(include_url=False), ("body",)))

    @app.exception_handler(StarletteHTTPException)
    async def _http(req: Request, exc: StarletteHTTPException) -> Response:
        titles = {404: "Not found", 405: "Method not allowed", 401: "Unauthorized", 413: "Payload too large"}
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            headers = {**(headers or {}), "Allow": _allowed(req, (headers or {}).get("Allow", ""))}
        code = HTTP_CODES.get(exc.status_code, "refused")
        if exc.status_code == 404 and exc.detail == "Not Found":
            code = "no_route"
        return problem(
            exc.status_code,
            titles.get(exc.status_code, "HTTP error"),
            _http_detail(req, exc, headers),
            code=code,
            headers=headers,
        )

    @app.exception_handler(PoolTimeout)
    async def _pool_exhausted(_req: Request, exc: PoolTimeout) -> Response:
        log.warning("database pool exhausted: %s", exc)
        return problem(
            503,
            "Service unavailable",
            "every database connection is busy; retry shortly",
            code="server_busy",
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(DBAPIError)
    async def _database(_req: Request, exc: DBAPIError) -> Response:
        refusal = database_refusal(exc)
        if refusal is not None:
            log.warning("database refused the request: %s", exc.orig)
            return app_error_response(refusal)
        log.exception("database error", exc_info=exc)
        return problem(500, "Internal error", "an unexpected error occurred; it has been logged", code="internal_error")

    @app.exception_handler(Exception)
    async def _unexpected(_req: Request, exc: Exception) -> Response:
        log.exception("unexpected error", exc_info=exc)
        return problem(500, "Internal error", "an unexpected error occurred; it has been logged", code="internal_error")


def _http_detail(req: Request, exc: StarletteHTTPException, headers: dict[str, str] | None) -> str:
    """What the router's own 404 and 405 mean, and where to look."""
    if exc.status_code == 404 and exc.detail == "Not Found":
        return (
            f"no route {req.url.path}; every route is listed in /openapi.json (browsable at /docs), "
            "all under /v1 but /healthz and /readyz"
        )
    if exc.status_code == 405:
        allowed = (headers or {}).get("Allow", "")
        return f"{req.method} is not allowed on {req.url.path}; allowed: {allowed}"
    return str(exc.detail)


_METHODS = ("get", "put", "post", "delete", "patch", "options", "head")


def _allowed(req: Request, fallback: str) -> str:
    """Every method served on the request's path (the router names those of its first match only)."""
    methods: set[str] = set()
    for template, operations in req.app.openapi().get("paths", {}).items():
        pattern = "".join(
            "[^/]+" if part.startswith("{") else re.escape(part) for part in re.split(r"(\{[^/}]+\})", template)
        )
        if re.fullmatch(pattern, req.url.path):
            methods |= {m.upper() for m in operations if m in _METHODS}
    return ", ".join(sorted(methods)) or fallback


def code_members(code: str) -> dict[str, dict[str, Any]]:
    """The members a code's problems may carry beside the common ones (`errors` on every 422)."""
    return dict(e.CODES[code].members)


def codes_table() -> str:
    """docs/problem-codes.md: every code, its status, its meaning and its extra members (a test keeps
    the committed file equal to this)."""
    rows = [
        "# Problem codes",
        "",
        "Every error is `application/problem+json` (RFC 9457) with `type`, `title`, `status`, `detail`,",
        "`code` and `request_id`; a 422 also has `errors` (each invalid field: `loc`, `msg`, and for a",
        "schema fault its `type` and `ctx`, to word it), a 429 or 503 (and a 409 `race_lost`) `retry_after`",
        "beside the `Retry-After` header. Translate by `code` (a field's fault by its `type`), never",
        f"by `detail`. `type` is `{TYPE_BASE}` + the code in kebab case. Generated from",
        "`app.kit.errors.CODES` (`python -m app.api.codes` writes this page).",
        "",
    ]
    return "\n".join(rows + codes_rows()) + "\n"


def codes_rows() -> list[str]:
    """The codes as a Markdown table (docs/problem-codes.md's)."""
    rows = ["| code | status | meaning | extra members |", "|---|---|---|---|"]
    for code in sorted(e.CODES, key=lambda c: (code_status(c), c)):
        members = ", ".join(f"`{m}`" for m in e.CODES[code].members) or "—"
        rows.append(f"| `{code}` | {code_status(code)} | {e.CODES[code].meaning} | {members} |")
    return rows
